//! Sentinel's failovers, from the sentinels' logs (`sentinel-<n>.log` in
//! the run's directory): each sentinel writes `+switch-master <name>
//! <old ip> <old port> <new ip> <new port>` when it learns that the
//! primary changed, a completed failover. One failover is the switches to
//! one new primary the sentinels logged within a few seconds of each
//! other; its time is the earliest of them.

use std::path::Path;

/// One completed failover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// When the first sentinel logged it, Unix milliseconds (the log's
    /// local time).
    pub unix_ms: u64,
    /// The new primary, `ip:port`.
    pub to: String,
}

/// Switches of different sentinels to the same primary this close are
/// one failover.
const SAME_FAILOVER_MS: u64 = 10_000;

/// The failovers in the sentinels' logs in `dir`, in time order.
pub fn switches(dir: &Path) -> Vec<Switch> {
    let mut all: Vec<Switch> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("sentinel-") && name.ends_with(".log")
        })
        .flat_map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
                .filter_map(parse)
                .collect::<Vec<_>>()
        })
        .collect();
    all.sort_by_key(|s| s.unix_ms);
    let mut failovers: Vec<Switch> = Vec::new();
    for s in all {
        let same = failovers
            .iter()
            .rev()
            .take_while(|f| s.unix_ms - f.unix_ms <= SAME_FAILOVER_MS)
            .any(|f| f.to == s.to);
        if !same {
            failovers.push(s);
        }
    }
    failovers
}

/// One `+switch-master` line:
/// `<pid>:X <day> <Mon> <year> <hh:mm:ss.mmm> # +switch-master <name> <old ip> <old port> <new ip> <new port>`.
fn parse(line: &str) -> Option<Switch> {
    let (head, rest) = line.split_once(" # +switch-master ")?;
    let mut words = head.split_whitespace();
    let _pid = words.next()?;
    let day: i32 = words.next()?.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| Some(*m) == words.clone().next())?;
    words.next();
    let year: i32 = words.next()?.parse().ok()?;
    let time = words.next()?;
    let (hms, millis) = time.split_once('.')?;
    let mut hms = hms.split(':').map(|p| p.parse::<i32>().ok());
    let (hour, min, sec) = (hms.next()??, hms.next()??, hms.next()??);
    let millis: u64 = millis.parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let [_name, _old_ip, _old_port, new_ip, new_port] = fields[..] else {
        return None;
    };
    // SAFETY: `tm` is a plain struct, zeroed then filled; mktime reads it
    // and writes back its normalized fields.
    let secs = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = year - 1900;
        tm.tm_mon = month as i32;
        tm.tm_mday = day;
        tm.tm_hour = hour;
        tm.tm_min = min;
        tm.tm_sec = sec;
        tm.tm_isdst = -1;
        libc::mktime(&mut tm)
    };
    let secs = u64::try_from(secs).ok()?;
    Some(Switch {
        unix_ms: secs * 1_000 + millis,
        to: format!("{new_ip}:{new_port}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_read_back_and_merge_per_failover() {
        let dir = flakeid_test_servers::ScratchDir::new("switches");
        let line = |at: &str, to: &str| {
            format!("123:X 26 Nov 2026 {at} # +switch-master flakeid 127.9.0.1 7000 {to} 7001\n")
        };
        std::fs::write(
            dir.path().join("sentinel-0.log"),
            format!(
                "123:X 26 Nov 2026 23:00:00.000 # +sdown master flakeid 127.9.0.1 7000\n{}{}",
                line("23:00:03.250", "127.9.0.2"),
                line("23:01:00.000", "127.9.0.3"),
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("sentinel-1.log"),
            line("23:00:03.100", "127.9.0.2"),
        )
        .unwrap();
        let s = switches(dir.path());
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].to, "127.9.0.2:7001");
        assert_eq!(s[1].unix_ms - s[0].unix_ms, 56_900);
        // 2026-11-26T23:00:03.100 in the machine's zone.
        let utc = 1_795_734_003_100u64;
        let offset = s[0].unix_ms as i64 - utc as i64;
        assert_eq!(
            offset % 900_000,
            0,
            "a whole quarter hour off UTC: {offset}"
        );
    }
}
