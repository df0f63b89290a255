//! The data lifecycle: retention (what expires, and the sweep that drops it), deletion of
//! series, and the cardinality of the store (counts and limits).

pub mod cardinality;
pub mod retention;
pub mod uidgc;

/// Whether `name` matches `glob`: `*` any run of characters (dots included), `?` one.
pub fn glob_match(glob: &str, name: &str) -> bool {
    let (g, n) = (glob.as_bytes(), name.as_bytes());
    let (mut gi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if gi < g.len() && (g[gi] == b'?' || g[gi] == n[ni]) {
            gi += 1;
            ni += 1;
        } else if gi < g.len() && g[gi] == b'*' {
            star = Some(gi);
            mark = ni;
            gi += 1;
        } else if let Some(s) = star {
            gi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    #[test]
    fn globs() {
        use super::glob_match as m;
        assert!(m("debug.*", "debug.a.b"));
        assert!(!m("debug.*", "debugx"));
        assert!(m("*", ""));
        assert!(m("a?c", "abc"));
        assert!(!m("a?c", "ac"));
        assert!(m("*.count", "x.y.count"));
        assert!(!m("*.count", "x.y.counts"));
        assert!(m("sys.*.idle", "sys.cpu.idle"));
    }
}
