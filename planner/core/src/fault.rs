//! Seeded fault injection, shared by every backend (`squall.fault.*`).
//!
//! Decisions are a pure function of the seed and the task's coordinates, so
//! a failing run can be replayed exactly.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_roughly_uniform() {
        assert_eq!(draw(7, "crash", &[1, 2, 3]), draw(7, "crash", &[1, 2, 3]));
        assert_ne!(draw(7, "crash", &[1, 2, 3]), draw(8, "crash", &[1, 2, 3]));
        let hits = (0..10_000).filter(|i| happens(0.2, 1, "x", &[*i])).count();
        assert!((1_700..2_300).contains(&hits), "{hits}");
        assert!(!happens(0.0, 1, "x", &[1]));
    }
}
