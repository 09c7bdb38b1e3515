//! A CSV file's bytes in chunks that end between records, for schema
//! inference. DataFusion's inference parses each chunk of the file's byte
//! stream on its own, after object_store's `newline_delimited_stream` has
//! cut the stream at line breaks outside quotes; but that cut finds the
//! last line break of a chunk scanning backwards with the quote state of
//! its front (`LineDelimiter::push`, object_store 0.13), so a file whose
//! quoted values hold line breaks was cut inside a value once it spanned
//! more than one read, and its table failed to register ("Expected 1
//! records, found 3 records at line 2"). Here the quote state is carried
//! forward byte by byte, as the file's own reader does.

use bytes::{Bytes, BytesMut};
use datafusion::error::Result;
use futures::stream::{BoxStream, StreamExt};

/// Where a record ends: the state of a scan over a CSV file's bytes.
#[derive(Debug, Default)]
struct Records {
    quoted: bool,
    escaped: bool,
}

impl Records {
    /// The end (one past the line break) of the last record that ends
    /// within `bytes`, the state carried on past them.
    fn last_end(&mut self, bytes: &[u8], quote: u8, escape: Option<u8>) -> Option<usize> {
        let mut last = None;
        for (i, &b) in bytes.iter().enumerate() {
            if self.escaped {
                self.escaped = false;
            } else if Some(b) == escape {
                self.escaped = true;
            } else if b == quote {
                // A doubled quote inside a quoted value toggles twice.
                self.quoted = !self.quoted;
            } else if b == b'\n' && !self.quoted {
                last = Some(i + 1);
            }
        }
        last
    }
}

/// `input` (a CSV file's decompressed bytes) as chunks each ending where a
/// record ends (the last holding whatever follows the last line break).
pub(crate) fn record_chunks(
    input: BoxStream<'static, Result<Bytes>>,
    quote: u8,
    escape: Option<u8>,
) -> BoxStream<'static, Result<Bytes>> {
    let state = (input, Records::default(), BytesMut::new(), false);
    futures::stream::unfold(
        state,
        move |(mut input, mut records, mut pending, done)| async move {
            if done {
                return None;
            }
            loop {
                match input.next().await {
                    Some(Ok(bytes)) => {
                        let before = pending.len();
                        let end = records.last_end(&bytes, quote, escape);
                        pending.extend_from_slice(&bytes);
                        if let Some(end) = end {
                            let chunk = pending.split_to(before + end).freeze();
                            return Some((Ok(chunk), (input, records, pending, false)));
                        }
                    }
                    Some(Err(e)) => return Some((Err(e), (input, records, pending, true))),
                    None if pending.is_empty() => return None,
                    None => {
                        let rest = std::mem::take(&mut pending).freeze();
                        return Some((Ok(rest), (input, records, pending, true)));
                    }
                }
            }
        },
    )
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn chunks(text: &str, every: usize, escape: Option<u8>) -> Vec<String> {
        let reads: Vec<Result<Bytes>> = text
            .as_bytes()
            .chunks(every)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        record_chunks(futures::stream::iter(reads).boxed(), b'"', escape)
            .map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn chunks_end_between_records_whatever_the_reads() {
        let text = "id,note\n1,\"a, \"\"b\"\"\nc\"\n2,plain\n3,\"x\ny\nz\"\n4,\"\"\"\"\n5,last";
        for every in 1..=text.len() {
            let got = chunks(text, every, None).await;
            assert_eq!(got.concat(), text, "reads of {every}");
            for chunk in &got[..got.len() - 1] {
                // Each chunk holds whole records: an even count of quotes,
                // ending at a line break.
                assert!(chunk.ends_with('\n'), "reads of {every}: {chunk:?}");
                assert_eq!(
                    chunk.matches('"').count() % 2,
                    0,
                    "reads of {every}: {chunk:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn an_escape_character_hides_the_quote_after_it() {
        let text = "a,\"x\\\"\ny\"\nb,z\n";
        let got = chunks(text, 3, Some(b'\\')).await;
        assert_eq!(got.concat(), text);
        assert!(got.iter().all(|c| c.ends_with('\n')), "{got:?}");
        assert!(
            got[0].starts_with("a,") && got[0].ends_with("y\"\n"),
            "{got:?}"
        );
        // Without one, a backslash is text and its quote ends the value.
        let got = chunks("a,\"x\\\"\nb,z\n", 4, None).await;
        assert_eq!(got, vec!["a,\"x\\\"\n".to_string(), "b,z\n".to_string()]);
    }
}
