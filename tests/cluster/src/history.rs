//! etcd's history of a run's keys (`etcd-history`, written by the runner
//! from a watch since revision 1), decoded: for the post-mortem of a
//! violation, which write set a mark, in what order, and which lease
//! revocation deleted a node key.

/// One change to one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub revision: u64,
    /// `PUT` or `DELETE` (a lease revoked deletes its keys).
    pub kind: &'static str,
    pub key: String,
    pub value: String,
    /// The etcd lease the key is bound to (0: none).
    pub lease: u64,
}

/// The changes in a watch stream as etcd's JSON gateway writes it.
pub fn parse(text: &str) -> Vec<Change> {
    let mut changes = Vec::new();
    // Every event is {"kv":{...}}, or {"type":"DELETE","kv":{...}} for a
    // deletion (a PUT has no type: it is the default).
    let mut from = 0;
    while let Some(found) = text[from..].find("\"kv\":{") {
        let at = from + found;
        let head_start = text[..at].rfind('{').unwrap_or(0);
        let kind = if text[head_start..at].contains("\"type\":\"DELETE\"") {
            "DELETE"
        } else {
            "PUT"
        };
        let body = &text[at + 6..];
        let kv = &body[..body.find('}').unwrap_or(body.len())];
        let field = |name: &str| -> Option<&str> {
            let at = kv.find(&format!("\"{name}\":\""))? + name.len() + 4;
            let value = &kv[at..];
            Some(&value[..value.find('"')?])
        };
        changes.push(Change {
            revision: field("mod_revision")
                .and_then(|r| r.parse().ok())
                .unwrap_or(0),
            kind,
            key: field("key").map(base64).unwrap_or_default(),
            value: field("value").map(base64).unwrap_or_default(),
            lease: field("lease").and_then(|l| l.parse().ok()).unwrap_or(0),
        });
        from = at + 6 + kv.len();
    }
    changes
}

/// Standard base64 (with padding) to text, lossily.
fn base64(s: &str) -> String {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::new();
    let (mut bits, mut n) = (0u32, 0);
    for c in s.bytes() {
        let Some(v) = value(c) else { continue };
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_stream_reads_back() {
        let text = r#"{"result":{"events":[{"kv":{"key":"cC9ub2Rlcy8w","create_revision":"2","mod_revision":"2","version":"1","value":"dG9rZW4=","lease":"7"}},{"kv":{"key":"cC9tYXJrcy8w","mod_revision":"2","value":"MTc5NQ=="}}]}}
{"result":{"events":[{"type":"DELETE","kv":{"key":"cC9ub2Rlcy8w","mod_revision":"5"}}]}}"#;
        let changes = parse(text);
        assert_eq!(changes.len(), 3);
        assert_eq!(
            changes[0],
            Change {
                revision: 2,
                kind: "PUT",
                key: "p/nodes/0".into(),
                value: "token".into(),
                lease: 7,
            }
        );
        assert_eq!(changes[1].value, "1795");
        assert_eq!((changes[2].revision, changes[2].kind), (5, "DELETE"));
        assert_eq!(changes[2].key, "p/nodes/0");
    }
}
