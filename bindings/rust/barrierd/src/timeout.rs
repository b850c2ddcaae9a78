// SPDX-License-Identifier: MIT
//! Timeouts as the library takes them: nanoseconds, negative for none.

use std::time::Duration;

/// `None` is no deadline (-1); a duration beyond `i64::MAX` ns (292 years) saturates.
pub(crate) fn timeout_ns(timeout: Option<Duration>) -> i64 {
    match timeout {
        None => -1,
        Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::timeout_ns;
    use std::time::Duration;

    #[test]
    fn none_is_negative_and_durations_saturate() {
        assert_eq!(timeout_ns(None), -1);
        assert_eq!(timeout_ns(Some(Duration::from_millis(3))), 3_000_000);
        assert_eq!(timeout_ns(Some(Duration::ZERO)), 0);
        assert_eq!(timeout_ns(Some(Duration::MAX)), i64::MAX);
    }
}
