//! Shell lines, parsed: the commands a line runs, with their words, environment assignments and redirections, and
//! how they are joined (pipelines, `&&`/`||`/`;` lists, subshells, groups, command and process substitutions,
//! heredocs).
//!
//! The parser is tree-sitter with the bash grammar ([`tree_sitter_bash`]); this module turns its concrete syntax tree
//! into the small [`ParsedLine`] tree that the policy reads. Nothing here decides anything: [`super::analysis`] does.
//!
//! # What is analysed and what is not
//!
//! A line is [`ParsedLine::error`] (and therefore never read-only) when tree-sitter reports an error or a missing token
//! (`echo "unterminated`, `ls &&`), when it is longer than [`MAX_LINE_BYTES`], or when it nests deeper than
//! [`MAX_DEPTH`]. The constructs below are converted; every other construct becomes [`Stmt::Unknown`], which is never
//! read-only, while the commands inside it are still listed so that the floors can see them:
//!
//! | construct | becomes |
//! |---|---|
//! | `cmd args`, `A=1 cmd`, `cmd >f` | [`Stmt::Command`] |
//! | `a \| b`, `a \|& b` | [`Stmt::Pipeline`] |
//! | `a && b`, `a \|\| b` | [`Stmt::AndOr`] |
//! | `a; b`, `a & b`, lines | [`Stmt::Sequence`] |
//! | `( … )` | [`Stmt::Subshell`] |
//! | `{ …; }` | [`Stmt::Group`] |
//! | `! cmd` | [`Stmt::Not`] |
//! | `[ … ]`, `[[ … ]]` | [`Stmt::Test`] |
//! | `A=1` alone | a [`Command`] with assignments and no words |
//! | `$( … )`, `` ` … ` ``, `<( … )`, `>( … )` | a [`Substitution`] of the word or redirect that holds it |
//! | `<<EOF`, `<<-EOF`, `<<'EOF'`, `<<<` | a [`Redirect`] with its [`Heredoc`] |
//! | `if`, `for`, `while`, `case`, functions, `(( ))`, `export`/`declare`/`local`/`readonly`/`unset` | [`Stmt::Unknown`] |
//!
//! Two grammar quirks are handled on purpose: tree-sitter-bash puts the words after a redirection target into the
//! redirection (`find > /dev/null . -delete`), and they are moved back to the command's words; and it reads
//! `[ a > b ]` as a comparison where bash redirects to the file `b`, so a `>` or `<` inside single brackets is
//! [`Stmt::Unknown`]. A backquote substitution that holds an escaped backquote (nested backquotes, which
//! tree-sitter reads as plain text) is unknown too.

pub mod arith;
mod lexical;
mod parse;
mod redirect;

pub use lexical::plain_name;

/// Whether `text` holds a command substitution (`$(…)` or a backquote) in any form, quoted or not: bash's
/// arithmetic (`$(( ))`, an array subscript, `[[ x -eq y ]]`, `test -v`) runs one even inside single quotes.
#[must_use]
pub fn hides_substitution(text: &str) -> bool {
    text.contains("$(") || text.contains('`')
}
#[cfg(test)]
mod tests;
mod walk;
mod words;

pub use parse::parse;
pub use walk::{Cwd, Visitor, walk};

/// The longest line parsed, in bytes (1 MiB): a longer line is [`ParseProblem::TooLong`]. A heredoc that writes a
/// whole file is the usual long line; 1 MiB is far above any real one and bounds the parser's time and memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The deepest nesting converted (substitutions in substitutions, subshells in groups, …). Deeper is
/// [`ParseProblem::TooDeep`], which keeps the recursive conversion's stack small on hostile input.
pub const MAX_DEPTH: usize = 64;

/// A parsed shell line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLine {
    /// The statements of the line, in order. With an [`error`](Self::error) these are what tree-sitter could recover.
    pub body: Vec<Stmt>,
    /// Why the line is not fully parsed; `None` when it is.
    pub error: Option<ParseProblem>,
}

/// Why a line did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseProblem {
    /// tree-sitter found a syntax error or a missing token; `at` is the byte offset of the first one.
    Syntax {
        /// Byte offset (UTF-8) of the first error or missing node in the line.
        at: usize,
    },
    /// The line is longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// The line nests deeper than [`MAX_DEPTH`].
    TooDeep,
    /// The parser could not run (the grammar did not load, or parsing was cancelled).
    Parser,
}

impl std::fmt::Display for ParseProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Syntax { at } => write!(f, "a syntax error at byte {at}"),
            Self::TooLong => write!(f, "a line longer than {MAX_LINE_BYTES} bytes"),
            Self::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH} levels"),
            Self::Parser => f.write_str("the shell parser failed"),
        }
    }
}

/// One statement of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    /// A simple command.
    Command(Command),
    /// Commands joined by `|` or `|&`; each runs in its own subshell.
    Pipeline(Vec<Stmt>),
    /// `left && right` or `left || right`.
    AndOr {
        /// The first statement.
        left: Box<Stmt>,
        /// `&&` or `||`.
        op: AndOr,
        /// The statement that runs after it, depending on `op`.
        right: Box<Stmt>,
    },
    /// Statements joined by `;`, `&` or newlines.
    Sequence(Vec<Stmt>),
    /// `( … )`: the statements run in a subshell (a `cd` inside does not change the line's directory).
    Subshell(Vec<Stmt>),
    /// `{ …; }`: the statements run in the current shell.
    Group(Vec<Stmt>),
    /// `! stmt`.
    Not(Box<Stmt>),
    /// A statement other than a simple command, with redirections (`( … ) > f`, `{ …; } 2>&1`).
    Redirected {
        /// The statement.
        body: Box<Stmt>,
        /// Its redirections, in order.
        redirects: Vec<Redirect>,
    },
    /// `[ … ]` or `[[ … ]]` (a test that changes nothing), with the substitutions it runs.
    Test(Vec<Substitution>),
    /// A construct this module does not analyse, such as `for`, `if`, `export` or a parse error.
    Unknown {
        /// What it is, in a few words, for a reason line (such as "a for loop").
        construct: String,
        /// The statements found inside it, so that the floors still see them.
        inner: Vec<Stmt>,
    },
}

/// How [`Stmt::AndOr`] joins its two statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AndOr {
    /// `&&`: the right side runs when the left succeeded.
    And,
    /// `||`: the right side runs when the left failed.
    Or,
}

/// A simple command: `A=1 B=2 name arg… >f`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// The `NAME=value` prefixes (or, with no words, the assignments that persist in the shell).
    pub assignments: Vec<Assignment>,
    /// The command name, then its arguments. Empty for a line of only assignments or redirections.
    pub words: Vec<Word>,
    /// Its redirections, in order.
    pub redirects: Vec<Redirect>,
}

impl Command {
    /// The command name as written after quote removal, when it is static (`ls`, `"ls"` and `\ls` are all `ls`).
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.words.first().and_then(|w| w.value.as_deref())
    }

    /// The arguments after the name.
    #[must_use]
    pub fn args(&self) -> &[Word] {
        self.words.get(1..).unwrap_or(&[])
    }

    /// Every substitution of the command: in its words, assignments and redirections (heredoc bodies included).
    pub fn substitutions(&self) -> impl Iterator<Item = &Substitution> {
        let words = self.words.iter().flat_map(|w| w.substitutions.iter());
        let assigned = self.assignments.iter().flat_map(|a| a.value.substitutions.iter());
        let redirected = self.redirects.iter().flat_map(Redirect::substitutions);
        words.chain(assigned).chain(redirected)
    }
}

/// `NAME=value` or `NAME+=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The variable (with its subscript for `a[1]=x`).
    pub name: String,
    /// The value; an empty static word for `NAME=`.
    pub value: Word,
}

/// One shell word: a command name, an argument, an assignment's value or a redirection target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// The word as written in the line.
    pub source: String,
    /// Its value after quote removal when the word expands nothing (no `$`, no substitution); `None` otherwise.
    /// Globs and `~` are not expanded: `*.rs` has the value `*.rs`.
    pub value: Option<String>,
    /// The word holds an unquoted glob or brace character (`*`, `?`, `[`, `{`).
    pub glob: bool,
    /// The word starts with an unquoted glob or brace character, so it may expand to a name that starts with `-`
    /// and reads as an option (`rg x *` with a file named `--pre=sh`).
    pub leading_glob: bool,
    /// For a word that starts with the home folder (`~`, `~/x`, `$HOME/x`, `${HOME}`), the rest after it (`""`,
    /// `/x`), when that rest is static.
    pub home_relative: Option<String>,
    /// A parameter expansion that does more than read a variable: `${x:=v}` and `${x=v}` assign (the value persists
    /// in the hidden shell), `${x@P}` expands a prompt, which can run command substitutions.
    pub unsafe_expansion: Option<&'static str>,
    /// The command and process substitutions inside the word, outermost first.
    pub substitutions: Vec<Substitution>,
}

impl Word {
    /// A static word, as a test or a wrapper would build it.
    #[must_use]
    pub fn literal(text: &str) -> Self {
        Self {
            source: text.to_owned(),
            value: Some(text.to_owned()),
            ..Self::default()
        }
    }
}

/// A command or process substitution and the statements it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Substitution {
    /// Which kind.
    pub kind: SubstitutionKind,
    /// The statements inside.
    pub body: Vec<Stmt>,
}

/// The kinds of [`Substitution`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubstitutionKind {
    /// `$( … )` or `` ` … ` ``.
    Command,
    /// `<( … )`.
    ProcessIn,
    /// `>( … )`.
    ProcessOut,
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The file descriptor written before the operator (`2>`), when one is.
    pub fd: Option<u32>,
    /// The operator.
    pub op: RedirectOp,
    /// The target: a file, a descriptor number (`2>&1`) or the herestring's word; `None` for `>&-`, `<&-` and
    /// heredocs.
    pub target: Option<Word>,
    /// The heredoc, for [`RedirectOp::Heredoc`].
    pub heredoc: Option<Heredoc>,
}

impl Redirect {
    /// The substitutions of the target and of the heredoc body.
    pub fn substitutions(&self) -> impl Iterator<Item = &Substitution> {
        let target = self.target.iter().flat_map(|w| w.substitutions.iter());
        let body = self.heredoc.iter().flat_map(|h| h.substitutions.iter());
        target.chain(body)
    }

    /// Whether this redirection opens its target as a file for writing: `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, and
    /// `>&word` where the word is not a descriptor number or `-` (bash then writes both streams to the file).
    #[must_use]
    pub fn writes_file(&self) -> bool {
        match self.op {
            RedirectOp::Write
            | RedirectOp::Append
            | RedirectOp::Clobber
            | RedirectOp::WriteBoth
            | RedirectOp::AppendBoth
            | RedirectOp::ReadWrite => true,
            RedirectOp::DupOut => match self.target.as_ref().and_then(|t| t.value.as_deref()) {
                Some(v) => !(v == "-" || (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))),
                None => true,
            },
            RedirectOp::Read | RedirectOp::DupIn | RedirectOp::Close | RedirectOp::Heredoc | RedirectOp::Herestring => {
                false
            }
        }
    }
}

/// The redirection operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`
    Write,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `&>` (and `>&file`, see [`Redirect::writes_file`])
    WriteBoth,
    /// `&>>`
    AppendBoth,
    /// `<>`
    ReadWrite,
    /// `>&`: duplicate an output descriptor.
    DupOut,
    /// `<&`: duplicate an input descriptor.
    DupIn,
    /// `>&-` or `<&-`: close a descriptor.
    Close,
    /// `<<` or `<<-`.
    Heredoc,
    /// `<<<`.
    Herestring,
}

/// A heredoc's body, as far as the policy needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heredoc {
    /// The delimiter was quoted (`<<'EOF'`, `<<"EOF"`, `<<\EOF`): the body is literal text.
    pub quoted: bool,
    /// The substitutions the body runs (none when quoted).
    pub substitutions: Vec<Substitution>,
}
