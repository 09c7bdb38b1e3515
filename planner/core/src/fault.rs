//! Seeded fault injection, shared by every backend (`squall.fault.*`).
//!
//! Decisions are a pure function of the seed and the task's coordinates, so
//! a failing run can be replayed exactly.
//!
//! | setting | where it acts |
//! |---|---|
//! | `squall.fault.task_crash_rate` | the worker fails the attempt, before or after writing its output |
//! | `squall.fault.task_delay_ms` | the worker waits before running (a slow worker) |
//! | `squall.fault.corrupt_payload_rate` | the coordinator sends a payload whose plan does not decode ([`corrupt_task_payload`]) |

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
