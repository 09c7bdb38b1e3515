//! Avro object container files, read whole into JSON values: what an
//! Iceberg table's manifest lists and manifests are.
//!
//! The file's own schema (in its header) drives the decoding: records,
//! enums, arrays, maps, unions, fixed, and the primitive types; logical
//! types are read as their underlying types; `bytes` and `fixed` values
//! (an Iceberg manifest's column bounds) as hexadecimal text ([`unhex`]
//! reads them back). Blocks compressed with deflate, zstandard or snappy
//! are read, or uncompressed ones.

use std::collections::HashMap;
use std::io::Read;

use serde_json::{Map, Value};

/// Why a file does not read as Avro.
pub(crate) type AvroError = String;

/// The records of the Avro object container file `bytes`.
pub(crate) fn records(bytes: &[u8]) -> Result<Vec<Value>, AvroError> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"Obj\x01" {
        return Err("not an Avro object container file".into());
    }
    // The header's metadata: a map of bytes.
    let mut meta: HashMap<String, Vec<u8>> = HashMap::new();
    loop {
        let mut count = r.long()?;
        if count == 0 {
            break;
        }
        if count < 0 {
            count = -count;
            r.long()?;
        }
        for _ in 0..count {
            let key = r.string()?;
            let value = r.bytes()?.to_vec();
            meta.insert(key, value);
        }
    }
    let sync = r.take(16)?.to_vec();
    let schema_text = meta
        .get("avro.schema")
        .ok_or_else(|| "no schema in the header".to_string())?;
    let schema: Value =
        serde_json::from_slice(schema_text).map_err(|e| format!("its schema is not JSON: {e}"))?;
    let codec = meta
        .get("avro.codec")
        .map(|c| String::from_utf8_lossy(c).to_string())
        .unwrap_or_else(|| "null".into());
    let mut names = Names::default();
    names.register(&schema, None);
    let mut out = Vec::new();
    while r.at < r.bytes.len() {
        let count = r.long()?;
        let size = usize::try_from(r.long()?).map_err(|_| "a negative block size".to_string())?;
        let block = r.take(size)?;
        let data = decompress(&codec, block)?;
        let mut b = Reader {
            bytes: &data,
            at: 0,
        };
        for _ in 0..count {
            out.push(names.decode(&schema, &mut b, None)?);
        }
        if r.take(16)? != sync.as_slice() {
            return Err("a block does not end with the file's sync marker".into());
        }
    }
    Ok(out)
}

fn decompress(codec: &str, block: &[u8]) -> Result<Vec<u8>, AvroError> {
    let mut out = Vec::new();
    match codec {
        "null" => out.extend_from_slice(block),
        "deflate" => {
            flate2::read::DeflateDecoder::new(block)
                .read_to_end(&mut out)
                .map_err(|e| format!("a deflate block: {e}"))?;
        }
        "zstandard" => {
            out = zstd::decode_all(block).map_err(|e| format!("a zstandard block: {e}"))?;
        }
        "snappy" => {
            // Snappy's raw format, then a 4-byte CRC of the data.
            let body = &block[..block.len().saturating_sub(4)];
            out = snap::raw::Decoder::new()
                .decompress_vec(body)
                .map_err(|e| format!("a snappy block: {e}"))?;
        }
        other => {
            return Err(format!(
                "blocks compressed with {other}, which squall does not read"
            ));
        }
    }
    Ok(out)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], AvroError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| "the file ends early".to_string())?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn long(&mut self) -> Result<i64, AvroError> {
        let mut value: u64 = 0;
        let mut shift = 0;
        loop {
            let byte = self.take(1)?[0];
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err("a varint longer than 64 bits".into());
            }
        }
        // Zigzag.
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    fn bytes(&mut self) -> Result<&'a [u8], AvroError> {
        let n = usize::try_from(self.long()?).map_err(|_| "a negative length".to_string())?;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, AvroError> {
        Ok(String::from_utf8_lossy(self.bytes()?).to_string())
    }
}

/// The named types of a schema (a record's type may name one defined earlier).
#[derive(Default)]
struct Names {
    types: HashMap<String, Value>,
}

impl Names {
    fn register(&mut self, schema: &Value, namespace: Option<&str>) {
        match schema {
            Value::Array(branches) => branches.iter().for_each(|b| self.register(b, namespace)),
            Value::Object(o) => {
                let ns = o.get("namespace").and_then(Value::as_str).or(namespace);
                if let Some(name) = o.get("name").and_then(Value::as_str)
                    && matches!(
                        o.get("type").and_then(Value::as_str),
                        Some("record" | "enum" | "fixed")
                    )
                {
                    self.types.insert(name.to_string(), schema.clone());
                    if let Some(ns) = ns {
                        self.types.insert(format!("{ns}.{name}"), schema.clone());
                    }
                }
                for key in ["items", "values", "type"] {
                    if let Some(inner) = o.get(key).filter(|v| !v.is_string()) {
                        self.register(inner, ns);
                    }
                }
                if let Some(Value::Array(fields)) = o.get("fields") {
                    for f in fields {
                        if let Some(t) = f.get("type") {
                            self.register(t, ns);
                        }
                    }
                }
            }
            Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn decode(&self, schema: &Value, r: &mut Reader, ns: Option<&str>) -> Result<Value, AvroError> {
        match schema {
            Value::String(name) => self.primitive(name, r, ns),
            Value::Array(branches) => {
                let i =
                    usize::try_from(r.long()?).map_err(|_| "a negative union index".to_string())?;
                let branch = branches
                    .get(i)
                    .ok_or_else(|| format!("union branch {i} of {}", branches.len()))?;
                self.decode(branch, r, ns)
            }
            Value::Object(o) => {
                let ty = o
                    .get("type")
                    .ok_or_else(|| "a type without its type".to_string())?;
                let ns = o.get("namespace").and_then(Value::as_str).or(ns);
                match ty.as_str() {
                    Some("record") | Some("error") => {
                        let mut out = Map::new();
                        if let Some(Value::Array(fields)) = o.get("fields") {
                            for f in fields {
                                let name = f.get("name").and_then(Value::as_str).unwrap_or("");
                                let t = f
                                    .get("type")
                                    .ok_or_else(|| format!("field {name} has no type"))?;
                                out.insert(name.to_string(), self.decode(t, r, ns)?);
                            }
                        }
                        Ok(Value::Object(out))
                    }
                    Some("enum") => {
                        let i = r.long()?;
                        let symbol = o
                            .get("symbols")
                            .and_then(Value::as_array)
                            .and_then(|s| s.get(usize::try_from(i).ok()?))
                            .cloned()
                            .unwrap_or(Value::Null);
                        Ok(symbol)
                    }
                    Some("array") => {
                        let items = o.get("items").ok_or("an array without items")?;
                        let mut out = Vec::new();
                        self.blocks(r, |names, r| {
                            out.push(names.decode(items, r, ns)?);
                            Ok(())
                        })?;
                        Ok(Value::Array(out))
                    }
                    Some("map") => {
                        let values = o.get("values").ok_or("a map without values")?;
                        let mut out = Map::new();
                        self.blocks(r, |names, r| {
                            let key = r.string()?;
                            out.insert(key, names.decode(values, r, ns)?);
                            Ok(())
                        })?;
                        Ok(Value::Object(out))
                    }
                    Some("fixed") => {
                        let size = o.get("size").and_then(Value::as_u64).unwrap_or(0);
                        let bytes = r.take(usize::try_from(size).map_err(|_| "a fixed size")?)?;
                        Ok(Value::String(hex(bytes)))
                    }
                    // A primitive with attributes (a logical type).
                    Some(name) => self.primitive(name, r, ns),
                    None => self.decode(ty, r, ns),
                }
            }
            other => Err(format!("a schema of {other}")),
        }
    }

    /// An array's or a map's blocks: `item` once per item.
    fn blocks(
        &self,
        r: &mut Reader,
        mut item: impl FnMut(&Self, &mut Reader) -> Result<(), AvroError>,
    ) -> Result<(), AvroError> {
        loop {
            let mut count = r.long()?;
            if count == 0 {
                return Ok(());
            }
            if count < 0 {
                count = -count;
                r.long()?;
            }
            for _ in 0..count {
                item(self, r)?;
            }
        }
    }

    fn primitive(&self, name: &str, r: &mut Reader, ns: Option<&str>) -> Result<Value, AvroError> {
        Ok(match name {
            "null" => Value::Null,
            "boolean" => Value::Bool(r.take(1)?[0] != 0),
            "int" | "long" => Value::from(r.long()?),
            "float" => {
                let b: [u8; 4] = r.take(4)?.try_into().map_err(|_| "a float")?;
                Value::from(f64::from(f32::from_le_bytes(b)))
            }
            "double" => {
                let b: [u8; 8] = r.take(8)?.try_into().map_err(|_| "a double")?;
                Value::from(f64::from_le_bytes(b))
            }
            "string" => Value::String(r.string()?),
            "bytes" => Value::String(hex(r.bytes()?)),
            named => {
                let schema = self
                    .types
                    .get(named)
                    .or_else(|| ns.and_then(|ns| self.types.get(&format!("{ns}.{named}"))))
                    .ok_or_else(|| format!("the type {named} is not defined"))?;
                return self.decode(schema, r, ns);
            }
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// The bytes of a `bytes` or `fixed` value as [`records`] reads them.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
