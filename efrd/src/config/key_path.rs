//! Where in `config.toml` a value sits: the dotted key that the parse and the checks name in their errors.

use std::fmt;

/// A dotted key: table keys and array indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Seg>);

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A table key.
    Key(String),
    /// An index into an array (of tables).
    Index(usize),
}

impl KeyPath {
    /// A path of keys only, such as `["daemon", "log_level"]`.
    #[must_use]
    pub fn keys(keys: &[&str]) -> Self {
        Self(keys.iter().map(|k| Seg::Key((*k).to_owned())).collect())
    }

    /// This path with one more key.
    #[must_use]
    pub fn key(mut self, key: &str) -> Self {
        self.0.push(Seg::Key(key.to_owned()));
        self
    }

    /// This path with one more index.
    #[must_use]
    pub fn index(mut self, index: usize) -> Self {
        self.0.push(Seg::Index(index));
        self
    }
}

/// `a.b[1].c`; a key that is not a bare TOML key is quoted, as TOML would write it.
impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(index) => write!(f, "[{index}]")?,
                Seg::Key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    let bare =
                        !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if bare { f.write_str(key)? } else { write!(f, "{key:?}")? }
                }
            }
        }
        Ok(())
    }
}
