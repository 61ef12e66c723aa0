//! Reading a user's SQL as PostgreSQL's lexer does, only as far as a spec needs: which text is
//! code (not a string, a quoted identifier, a dollar-quoted body or a comment), so that named
//! parameters are replaced and wall-clock functions found only where PostgreSQL would see them
//! (`scan.l`: `xq`, `xd`, `xdolq`, `xc` and `--` comments).

/// One piece of a statement's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Code PostgreSQL parses.
    Code,
    /// A string constant (`'…'`, `E'…'`), its quotes included.
    Str,
    /// A quoted identifier, a dollar-quoted body or a comment: never looked into.
    Opaque,
}

/// Splits `sql` into pieces, in order; their texts concatenate to `sql`.
pub(crate) fn pieces(sql: &str) -> Vec<(Piece, &str)> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    fn push<'a>(
        out: &mut Vec<(Piece, &'a str)>,
        sql: &'a str,
        kind: Piece,
        from: usize,
        to: usize,
    ) {
        if to > from {
            out.push((kind, &sql[from..to]));
        }
    }
    while i < b.len() {
        let (kind, end) = match b[i] {
            b'\'' => (Piece::Str, quoted(b, i, b'\'')),
            b'"' => (Piece::Opaque, quoted(b, i, b'"')),
            b'-' if b.get(i + 1) == Some(&b'-') => (
                Piece::Opaque,
                b[i..]
                    .iter()
                    .position(|c| *c == b'\n')
                    .map_or(b.len(), |p| i + p),
            ),
            b'/' if b.get(i + 1) == Some(&b'*') => (Piece::Opaque, block_comment(b, i)),
            b'$' => match dollar_tag(b, i) {
                Some(tag) => {
                    let body = i + tag.len();
                    let end =
                        find(&b[body..], tag.as_bytes()).map_or(b.len(), |p| body + p + tag.len());
                    (Piece::Opaque, end)
                }
                None => {
                    i += 1;
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        push(&mut out, sql, Piece::Code, start, i);
        push(&mut out, sql, kind, i, end);
        i = end;
        start = end;
    }
    push(&mut out, sql, Piece::Code, start, b.len());
    out
}

/// The end of a quoted run starting at `i` (a doubled quote stays inside).
fn quoted(b: &[u8], i: usize, q: u8) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == q {
            if b.get(j + 1) == Some(&q) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// `/* … */`, nested as PostgreSQL nests them.
fn block_comment(b: &[u8], i: usize) -> usize {
    let (mut depth, mut j) = (0usize, i);
    while j + 1 < b.len() {
        if b[j] == b'/' && b[j + 1] == b'*' {
            depth += 1;
            j += 2;
        } else if b[j] == b'*' && b[j + 1] == b'/' {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else {
            j += 1;
        }
    }
    b.len()
}

/// `$tag$` or `$$` at `i` (not `$1`, a parameter).
fn dollar_tag(b: &[u8], i: usize) -> Option<String> {
    let rest = &b[i + 1..];
    let n = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))?;
    if rest[n] != b'$' || rest.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some(String::from_utf8_lossy(&b[i..i + n + 2]).into_owned())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Words of a code piece (identifiers and keywords, lower-cased) with their byte offsets.
pub(crate) fn words(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push((s, code[s..i].to_ascii_lowercase()));
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_comments_and_dollar_bodies_are_not_code() {
        let sql = "SELECT ':x', \"a:b\" -- :c\n, $$ :d $$, $t$ x $t$, /* :e /* f */ */ :g, $1";
        let code: String = pieces(sql)
            .into_iter()
            .filter(|(k, _)| *k == Piece::Code)
            .map(|(_, t)| t)
            .collect();
        assert!(!code.contains(":x") && !code.contains(":c") && !code.contains(":d"));
        assert!(!code.contains(":e") && code.contains(":g") && code.contains("$1"));
        let all: String = pieces(sql).into_iter().map(|(_, t)| t).collect();
        assert_eq!(all, sql);
    }

    #[test]
    fn a_doubled_quote_stays_in_the_string() {
        let p = pieces("SELECT 'it''s :no' , :yes");
        assert_eq!(p[1], (Piece::Str, "'it''s :no'"));
        assert_eq!(p[2], (Piece::Code, " , :yes"));
    }
}
