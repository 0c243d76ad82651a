//! Shortening display text until a payload fits its byte budget.

/// The first `k` characters of `s`, with "…" appended when anything was cut.
pub(crate) fn truncate_chars(s: &str, k: usize) -> String {
    if s.chars().count() <= k {
        return s.to_string();
    }
    let mut out: String = s.chars().take(k).collect::<String>().trim_end().to_string();
    out.push('…');
    out
}

/// The longest truncation of `s` for which `fits` holds, or `None` when not
/// even "…" fits. Binary search: `fits` is monotonic in the length.
pub(crate) fn shrink_to_fit(s: &str, fits: impl Fn(&str) -> bool) -> Option<String> {
    let n = s.chars().count();
    if fits(s) {
        return Some(s.to_string());
    }
    let (mut lo, mut hi) = (0usize, n); // invariant: truncate(hi) does not fit
    if !fits(&truncate_chars(s, 0)) {
        return None;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(&truncate_chars(s, mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(truncate_chars(s, lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_characters_and_marks_the_cut() {
        assert_eq!(truncate_chars("héllo wörld", 5), "héllo…");
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("ab cd", 3), "ab…");
        assert_eq!(truncate_chars("🚀🚀🚀", 1), "🚀…");
    }

    #[test]
    fn shrink_finds_the_longest_fit() {
        let s = "a".repeat(100);
        let got = shrink_to_fit(&s, |t| t.len() <= 53).unwrap();
        assert_eq!(got.len(), 53); // 50 'a' + 3 bytes of "…"
        assert_eq!(shrink_to_fit(&s, |_| false), None);
        assert_eq!(shrink_to_fit("ok", |_| true).as_deref(), Some("ok"));
    }
}
