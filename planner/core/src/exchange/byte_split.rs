//! Byte-split columns: fixed-width values written byte plane by byte plane.
//!
//! A column of N values of W bytes is written as W planes of N bytes: every
//! value's first byte, then every value's second byte, and so on (Parquet's
//! BYTE_STREAM_SPLIT, Blosc's shuffle). Exchange objects are compressed buffer
//! by buffer (arrow's IPC compression), and what the exchange carries is
//! mostly keys, prices and dates whose high bytes are zero or nearly
//! constant: laid out value by value, those bytes break the buffer into one
//! short match per value, which is where zstd spends its time (finding,
//! encoding and decoding sequences); laid out by plane, they are a few long
//! runs and the low bytes are literals for the entropy coder. Measured on
//! line-item columns hash-partitioned as a map task writes them (5,400-row
//! batches, zstd level 1): compression 3-5x faster, decompression 3-4x
//! faster, and the bytes 0-34% fewer (`l_partkey` -23%, `l_discount` -34%).
//! The transposition itself runs at several GB/s, an order of magnitude
//! faster than the codec.
//!
//! [`split_batch`] transposes the values buffer of every top-level column
//! whose type is fixed-width and at least two bytes wide (integers, floats,
//! decimals, dates, times, timestamps, durations, intervals); the arrays keep
//! their types and validity, so the stream is still arrow's own IPC stream,
//! its values scrambled. [`join_batch`] undoes it after decoding. Both sides
//! choose the same columns from the schema alone, so a reader needs only to
//! know that the writer split ([`super::byte_split`]: a query's setting,
//! which its writers and readers share).
//!
//! Not split: booleans and one-byte types (nothing to gain), strings and
//! binaries (their offsets and views would no longer be valid ones, which
//! arrow's IPC reader checks), dictionaries and nested columns (left as
//! they are).

use std::sync::Arc;

use arrow::array::{Array, ArrayData, ArrayRef, make_array};
use arrow::buffer::MutableBuffer;
use arrow::datatypes::DataType;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use crate::error::Result;

/// Values a block transposes at once: each plane gets 8 bytes per block.
const BLOCK: usize = 8;

/// Bytes per value of a column [`split_batch`] splits, or None.
pub fn split_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::Boolean | DataType::Dictionary(..) => None,
        t => t.primitive_width().filter(|w| *w >= 2),
    }
}

/// `batch` with the values of each of its fixed-width columns (see
/// [`split_width`]) laid out plane by plane.
pub fn split_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    transform(batch, split)
}

/// Undo [`split_batch`].
pub fn join_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    transform(batch, join)
}

fn transform(batch: &RecordBatch, f: fn(&[u8], usize, &mut [u8])) -> Result<RecordBatch> {
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|field| split_width(field.data_type()).is_some())
    {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .map(|column| match split_width(column.data_type()) {
            Some(width) => transform_array(column, width, f),
            None => Ok(Arc::clone(column)),
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &options,
    )?)
}

/// The array with its values buffer passed through `f` (offset 0 after).
fn transform_array(
    array: &ArrayRef,
    width: usize,
    f: fn(&[u8], usize, &mut [u8]),
) -> Result<ArrayRef> {
    let data = array.to_data();
    let (offset, len) = (data.offset(), data.len());
    let values = &data.buffers()[0].as_slice()[offset * width..(offset + len) * width];
    let mut out = MutableBuffer::from_len_zeroed(len * width);
    f(values, width, out.as_slice_mut());
    let transformed = ArrayData::builder(data.data_type().clone())
        .len(len)
        .add_buffer(out.into())
        .nulls(data.nulls().cloned())
        .build()?;
    Ok(make_array(transformed))
}

/// Lay out `values` (values of `width` bytes) plane by plane into `out`:
/// byte `j` of value `i` goes to `out[j * n + i]`.
pub fn split(values: &[u8], width: usize, out: &mut [u8]) {
    match width {
        2 => split_n::<2>(values, out),
        4 => split_n::<4>(values, out),
        8 => split_n::<8>(values, out),
        16 => split_n::<16>(values, out),
        32 => split_n::<32>(values, out),
        _ => split_any(values, width, out),
    }
}

/// Undo [`split`].
pub fn join(planes: &[u8], width: usize, out: &mut [u8]) {
    match width {
        2 => join_n::<2>(planes, out),
        4 => join_n::<4>(planes, out),
        8 => join_n::<8>(planes, out),
        16 => join_n::<16>(planes, out),
        32 => join_n::<32>(planes, out),
        _ => join_any(planes, width, out),
    }
}

/// [`split`] for a width known at compile time: blocks of 8 values, each
/// plane's 8 bytes of a block gathered and stored together.
fn split_n<const W: usize>(values: &[u8], out: &mut [u8]) {
    let n = values.len() / W;
    let blocks = n / BLOCK;
    for (b, block) in values.chunks_exact(BLOCK * W).enumerate() {
        for j in 0..W {
            let mut plane = [0u8; BLOCK];
            for (k, byte) in plane.iter_mut().enumerate() {
                *byte = block[k * W + j];
            }
            let at = j * n + b * BLOCK;
            out[at..at + BLOCK].copy_from_slice(&plane);
        }
    }
    for i in blocks * BLOCK..n {
        for j in 0..W {
            out[j * n + i] = values[i * W + j];
        }
    }
}

fn join_n<const W: usize>(planes: &[u8], out: &mut [u8]) {
    let n = planes.len() / W;
    let blocks = n / BLOCK;
    for (b, block) in out.chunks_exact_mut(BLOCK * W).enumerate() {
        for j in 0..W {
            let at = j * n + b * BLOCK;
            let plane = &planes[at..at + BLOCK];
            for (k, byte) in plane.iter().enumerate() {
                block[k * W + j] = *byte;
            }
        }
    }
    for i in blocks * BLOCK..n {
        for j in 0..W {
            out[i * W + j] = planes[j * n + i];
        }
    }
}

fn split_any(values: &[u8], width: usize, out: &mut [u8]) {
    let n = values.len() / width;
    for (i, value) in values.chunks_exact(width).enumerate() {
        for (j, byte) in value.iter().enumerate() {
            out[j * n + i] = *byte;
        }
    }
}

fn join_any(planes: &[u8], width: usize, out: &mut [u8]) {
    let n = planes.len() / width;
    for (i, value) in out.chunks_exact_mut(width).enumerate() {
        for (j, byte) in value.iter_mut().enumerate() {
            *byte = planes[j * n + i];
        }
    }
}

#[cfg(test)]
#[path = "byte_split_tests.rs"]
mod tests;
