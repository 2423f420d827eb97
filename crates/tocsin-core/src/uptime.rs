//! Uptime arithmetic: the percentage of counted checks that were not `DOWN`, as every surface
//! (the API's stats, reports, public pages) rounds it. Which checks count is the caller's
//! rule (the server's rollups); this module owns only the figure.

/// Percentage of `total` counted checks that were not among the `down` ones, rounded to 4
/// decimals; `None` without counted checks.
pub fn uptime_percent(total: i64, down: i64) -> Option<f64> {
    (total > 0).then(|| {
        let pct = (total - down) as f64 * 100.0 / total as f64;
        (pct * 10_000.0).round() / 10_000.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_four_decimals_and_has_no_figure_without_checks() {
        assert_eq!(uptime_percent(3, 1), Some(66.6667));
        assert_eq!(uptime_percent(4, 0), Some(100.0));
        assert_eq!(uptime_percent(0, 0), None);
    }
}
