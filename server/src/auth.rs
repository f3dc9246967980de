//! The optional bearer token of the ID APIs (HTTP `/v1/...` and the gRPC
//! `flakeid.v1.IdGenerator` service; probes and metrics stay open).

/// The token calls must present as `Authorization: Bearer <token>`.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// A token; the configuration checked it is non-empty, without spaces.
    pub fn new(token: String) -> Token {
        Token(token)
    }

    /// Whether an `Authorization` value carries this token. The comparison
    /// takes the same time wherever the first difference is.
    pub fn accepts(&self, header: Option<&str>) -> bool {
        let Some(given) = header.and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        }) else {
            return false;
        };
        let (a, b) = (given.trim().as_bytes(), self.0.as_bytes());
        let mut differ = a.len() ^ b.len();
        for (i, byte) in b.iter().enumerate() {
            differ |= usize::from(a.get(i).copied().unwrap_or(0) ^ byte);
        }
        differ == 0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_accepted() {
        let token = Token::new("s3cret".into());
        assert!(token.accepts(Some("Bearer s3cret")));
        for wrong in [
            None,
            Some("s3cret"),
            Some("Bearer s3cre"),
            Some("Bearer s3crett"),
            Some("Basic s3cret"),
        ] {
            assert!(!token.accepts(wrong), "{wrong:?}");
        }
    }
}
