//! The one reader of `key=value` words that trace lines, setup lines and fault lines share:
//! each field is taken once, so a missing, duplicated or unknown field is named in a
//! [`TextError`] with the file and the line.

use super::read::TextError;

impl TextError {
    /// An error at `file:line` about `field` (`line` when no field can be named).
    pub fn at(file: &str, line: usize, field: &str, message: impl Into<String>) -> TextError {
        TextError {
            file: file.to_string(),
            line,
            field: if field.is_empty() { "line" } else { field }.to_string(),
            message: message.into(),
        }
    }
}

/// The `key=value` words of one line, taken field by field.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    file: &'a str,
    /// The line's number, from 1.
    pub line: usize,
    items: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    /// Splits `words` into fields; a word without `=`, an empty name or a name given twice is
    /// an error.
    pub fn read(file: &'a str, line: usize, words: &[&'a str]) -> Result<Fields<'a>, TextError> {
        let err = |field: &str, m: String| TextError::at(file, line, field, m);
        let mut items: Vec<(&str, &str)> = Vec::new();
        for w in words {
            let Some((k, v)) = w.split_once('=') else {
                return Err(match items.last() {
                    Some((prev, _)) => err(
                        prev,
                        format!(
                            "`{w}` is not `key=value`: values are percent-escaped, so a space \
                             inside `{prev}` is written %20"
                        ),
                    ),
                    None => err(w, format!("expected `key=value`, found `{w}`")),
                });
            };
            if k.is_empty() {
                return Err(err(w, format!("`{w}` has no field name before `=`")));
            }
            if items.iter().any(|(seen, _)| *seen == k) {
                return Err(err(k, format!("duplicate field `{k}`")));
            }
            items.push((k, v));
        }
        Ok(Fields { file, line, items })
    }

    /// An error on this line about `field`.
    pub fn err(&self, field: &str, message: impl Into<String>) -> TextError {
        TextError::at(self.file, self.line, field, message)
    }

    /// Whether the line has `key` (not taken yet).
    pub fn has(&self, key: &str) -> bool {
        self.items.iter().any(|(k, _)| *k == key)
    }

    /// Takes `key`'s raw value, if the line has it.
    pub fn opt(&mut self, key: &str) -> Option<&'a str> {
        let i = self.items.iter().position(|(k, _)| *k == key)?;
        Some(self.items.remove(i).1)
    }

    /// Takes `key`'s raw value; a missing field is an error.
    pub fn take(&mut self, key: &str) -> Result<&'a str, TextError> {
        self.opt(key).ok_or_else(|| self.err(key, "missing"))
    }

    /// Takes `key` and parses it; `what` names what was expected.
    pub fn parse<T: std::str::FromStr>(&mut self, key: &str, what: &str) -> Result<T, TextError> {
        let v = self.take(key)?;
        v.parse()
            .map_err(|_| self.err(key, format!("expected {what}, found `{v}`")))
    }

    /// The first field nobody took, if any (the caller words the error).
    pub fn leftover(&self) -> Option<&'a str> {
        self.items.first().map(|(k, _)| *k)
    }
}
