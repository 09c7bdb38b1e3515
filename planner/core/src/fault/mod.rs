//! Seeded fault injection, shared by every backend (`squall.fault.*`).
//!
//! Faults are injected by *wrapping the seams* every backend shares, so the
//! embedded and the aws backends run exactly the same injection code:
//!
//! | setting | seam | what happens |
//! |---|---|---|
//! | `task_crash_rate` | worker | the attempt fails, before or after writing its output |
//! | `task_abort_rate` | worker | the worker process dies mid-task (`abort`); no report ever comes |
//! | `task_hang_rate`, `task_hang_ms` | worker | the attempt hangs (a straggler) until stopped |
//! | `task_delay_ms` | worker | every attempt waits before it runs (a slow worker) |
//! | `store_error_rate` | object store ([`FaultyStore`]) | a request fails with a 503 SlowDown |
//! | `store_slow_rate`, `store_slow_ms` | object store ([`FaultyStore`]) | a request answers late |
//! | `message_duplicate_rate`, `message_loss_rate`, `message_delay_rate` | completion queue ([`FaultyQueue`]) | a report arrives twice, never, or late (reordered) |
//! | `invoke_throttle_rate` | invoker ([`FaultyInvoker`]) | an invocation is refused as throttled |
//! | `corrupt_payload_rate` | coordinator | a payload whose plan does not decode ([`corrupt_task_payload`]) |
//!
//! Decisions are a pure function of the seed and coordinates (stage, task,
//! attempt; for requests also the object, the range and how many times that
//! same request was made), so a failing run can be replayed exactly, and a
//! retried request draws again instead of meeting the same fault forever.
//! What this module does not do: recover. That is [`crate::recovery`].

mod invoker;
mod queue;
mod store;

pub use invoker::FaultyInvoker;
pub use queue::FaultyQueue;
pub use store::{FaultyStore, InjectedStoreError};

use bytes::Bytes;

/// A uniform draw in [0, 1) from the seed and some coordinates (splitmix64).
pub fn draw(seed: u64, salt: &str, coords: &[u64]) -> f64 {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    for b in salt.bytes() {
        x = mix(x ^ u64::from(b));
    }
    for c in coords {
        x = mix(x ^ c);
    }
    (mix(x) >> 11) as f64 / (1u64 << 53) as f64
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable 64-bit hash of some text (FNV-1a), to turn names (object keys,
/// query ids) into coordinates.
pub fn hash_text(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Counts how often each request key has been seen, so that a retried
/// request draws a fresh decision (reproducibly: the n-th time of a request).
#[derive(Debug, Default)]
pub(crate) struct Occurrences(std::sync::Mutex<std::collections::HashMap<u64, u64>>);

impl Occurrences {
    pub(crate) fn next(&self, key: u64) -> u64 {
        match self.0.lock() {
            Ok(mut seen) => {
                let n = seen.entry(key).or_insert(0);
                *n += 1;
                *n - 1
            }
            Err(_) => 0,
        }
    }
}

/// Whether an event with probability `rate` happens at these coordinates.
pub fn happens(rate: f64, seed: u64, salt: &str, coords: &[u64]) -> bool {
    rate > 0.0 && draw(seed, salt, coords) < rate
}

/// A serialized `TaskSpec` whose plan no longer decodes: the `plan` field
/// becomes text that is not base64, while the identity fields (query, stage,
/// task, attempt, reply address) stay readable, as when a payload is damaged
/// or comes from an incompatible coordinator. Bytes that are not a JSON object
/// come back unchanged.
pub fn corrupt_task_payload(payload: &[u8]) -> Bytes {
    match serde_json::from_slice::<serde_json::Value>(payload) {
        Ok(serde_json::Value::Object(mut fields)) => {
            fields.insert(
                "plan".into(),
                serde_json::Value::String(
                    "%% corrupted by squall.fault.corrupt_payload_rate %%".into(),
                ),
            );
            serde_json::to_vec(&fields)
                .map(Bytes::from)
                .unwrap_or_else(|_| Bytes::copy_from_slice(payload))
        }
        _ => Bytes::copy_from_slice(payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupted_payloads_keep_their_identity() {
        let payload = br#"{"protocol":1,"query_id":"q1","stage":2,"task":3,"attempt":0,"plan":"AAE=","reply_to":"r"}"#;
        let bad = corrupt_task_payload(payload);
        let err = crate::task::TaskSpec::decode(&bad).unwrap_err();
        assert!(
            matches!(err, crate::error::SquallError::BadTaskPayload(_)),
            "{err}"
        );
        let id = crate::task::TaskIdentity::salvage(&bad).unwrap();
        assert_eq!(
            (
                id.query_id.as_str(),
                id.stage,
                id.task,
                id.reply_to.as_str()
            ),
            ("q1", 2, 3, "r")
        );
        assert_eq!(
            corrupt_task_payload(b"not json"),
            Bytes::from_static(b"not json")
        );
    }

    #[test]
    fn draws_are_reproducible_and_roughly_uniform() {
        assert_eq!(draw(7, "crash", &[1, 2, 3]), draw(7, "crash", &[1, 2, 3]));
        assert_ne!(draw(7, "crash", &[1, 2, 3]), draw(8, "crash", &[1, 2, 3]));
        let hits = (0..10_000).filter(|i| happens(0.2, 1, "x", &[*i])).count();
        assert!((1_700..2_300).contains(&hits), "{hits}");
        assert!(!happens(0.0, 1, "x", &[1]));
    }
}
