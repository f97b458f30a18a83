//! Calendar arithmetic for the timestamps mcp-lock writes and reads (the audit log's,
//! registries' release times): UTC, the proleptic Gregorian calendar, no time zones.

/// Days since 1970-01-01 of a date (Howard Hinnant's algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// RFC 3339 in UTC of seconds since the epoch: `2026-01-02T03:04:05Z`, or with
/// milliseconds `2026-01-02T03:04:05.678Z`.
pub fn format_utc(secs: i64, millis: Option<u32>) -> String {
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let fraction = millis.map(|m| format!(".{m:03}")).unwrap_or_default();
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_dates_convert_both_ways_across_leap_years_and_the_epoch() {
        for (date, days) in [
            ((1970, 1, 1), 0),
            ((2000, 2, 29), 11_016),
            ((1969, 12, 31), -1),
            ((2026, 12, 3), 20_790),
        ] {
            assert_eq!(days_from_civil(date.0, date.1, date.2), days, "{date:?}");
            assert_eq!(
                civil_from_days(days),
                (date.0, date.1 as u32, date.2 as u32)
            );
        }
        assert_eq!(format_utc(86_399, None), "1970-01-01T23:59:59Z");
        assert_eq!(format_utc(0, Some(7)), "1970-01-01T00:00:00.007Z");
    }
}
