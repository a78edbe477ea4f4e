//! Where a chunk goes in a file: context matching at four levels, `@@` narrowing, and the refusal of a guess.
//!
//! A chunk is placed by its expected lines (context and removed lines) and its `@@` headers. The rules:
//!
//! - Lines compare at four [`Level`]s, strictest first: exact, then ignoring trailing whitespace, then ignoring
//!   leading and trailing whitespace, then also mapping typographic dashes, quotes and spaces to their ASCII forms.
//!   A looser level is tried only when no place matches at a stricter one.
//! - The search starts at the cursor: the line after the previous chunk of the same file. Chunks are in file order.
//! - Each `@@ header` is a line of the file, compared as above, that must come before the chunk (or be its first
//!   context line). The first header is searched from the cursor; each next header, and then the chunk's lines,
//!   inside the *section* of the header before: the lines after it that are indented deeper than it (a function's
//!   body, a class's members). When the section has no match, or the header is not followed by deeper lines (a
//!   Markdown heading, a TOML table), the search runs from the header to the end of the enclosing search.
//! - Every place that the headers and the lines allow counts. When two or more places match at the best level, the
//!   chunk is ambiguous and the patch is refused: a guess could change the wrong lines.
//! - `*** End of File`: the lines must end the file.
//! - A chunk without expected lines (only `+` lines) goes right after its last header, or at the end of the file when
//!   it has no header.

use std::borrow::Cow;

/// How strictly two lines must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Byte for byte.
    Exact,
    /// Ignoring trailing whitespace.
    TrimEnd,
    /// Ignoring leading and trailing whitespace.
    Trim,
    /// Ignoring leading and trailing whitespace, with typographic dashes, quotes and spaces read as ASCII.
    Unicode,
}

impl Level {
    /// The levels, strictest first.
    pub const ALL: [Self; 4] = [Self::Exact, Self::TrimEnd, Self::Trim, Self::Unicode];

    /// The form of `line` that this level compares.
    #[must_use]
    pub fn key(self, line: &str) -> Cow<'_, str> {
        match self {
            Self::Exact => Cow::Borrowed(line),
            Self::TrimEnd => Cow::Borrowed(line.trim_end()),
            Self::Trim => Cow::Borrowed(line.trim()),
            Self::Unicode => {
                let line = line.trim();
                if line.chars().all(|c| ascii_form(c) == c) {
                    Cow::Borrowed(line)
                } else {
                    Cow::Owned(line.chars().map(ascii_form).collect())
                }
            }
        }
    }
}

/// The ASCII character that a typographic one stands for (models often write ASCII for a file's curly quotes and
/// dashes, and the other way round); other characters map to themselves.
fn ascii_form(c: char) -> char {
    match c {
        // Hyphens, dashes and the minus sign.
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        // Single quotes and the prime.
        '\u{2018}'..='\u{201b}' | '\u{2032}' => '\'',
        // Double quotes and the double prime.
        '\u{201c}'..='\u{201f}' | '\u{2033}' => '"',
        // No-break, fixed-width and ideographic spaces.
        '\u{00a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The lines of a file, keyed at every level once so that each search compares precomputed forms.
#[derive(Debug)]
pub struct Keys<'a> {
    levels: [Vec<Cow<'a, str>>; 4],
    indents: Vec<Option<usize>>,
}

impl<'a> Keys<'a> {
    /// Keys the lines of a file (texts without their terminators).
    #[must_use]
    pub fn new(lines: &[&'a str]) -> Self {
        let levels = Level::ALL.map(|level| lines.iter().map(|line| level.key(line)).collect());
        let indents = lines.iter().map(|line| indent(line)).collect();
        Self { levels, indents }
    }

    fn len(&self) -> usize {
        self.indents.len()
    }

    /// Whether `pattern` (keyed at `level`) matches the file at line `start`.
    fn matches_at(&self, level: Level, pattern: &[Cow<'_, str>], start: usize) -> bool {
        let lines = &self.levels[level as usize];
        start + pattern.len() <= lines.len() && lines[start..start + pattern.len()] == *pattern
    }
}

/// The indentation width of a line (a tab counts 4), or `None` for a blank line, which belongs to no level.
fn indent(line: &str) -> Option<usize> {
    let mut width = 0;
    for c in line.chars() {
        match c {
            ' ' => width += 1,
            '\t' => width += 4,
            c if c.is_whitespace() => width += 1,
            _ => return Some(width),
        }
    }
    None
}

/// What a chunk asks for: its headers, its expected lines, and whether they end the file.
#[derive(Debug, Clone, Copy)]
pub struct Target<'p> {
    /// The `@@` headers, outermost first.
    pub headers: &'p [String],
    /// The expected lines (context and removed), in order.
    pub lines: &'p [&'p str],
    /// `*** End of File`.
    pub end_of_file: bool,
}

/// Why a chunk has no place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// The header at this index (into the chunk's headers) matched no line where it was searched.
    Header(usize),
    /// The headers matched (if any) but the expected lines did not.
    Lines,
    /// The chunk matches at these 0-based lines, sorted, all at the best level.
    Ambiguous(Vec<usize>),
}

/// The place of a chunk: its first expected line (or the insertion point), 0-based, and the level that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The 0-based line where the expected lines start, or where the new lines go for a chunk without expected
    /// lines.
    pub start: usize,
    /// The level at which the expected lines matched.
    pub level: Level,
}

/// A half-open range of lines where a match may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Region {
    start: usize,
    end: usize,
    /// The line of the header that the region follows: the chunk's lines may also start there, for a model that
    /// repeats the header as its first context line.
    header: Option<usize>,
}

/// Finds the one place of `target` at or after line `cursor`.
///
/// # Errors
///
/// [`Miss`]: a header or the lines are not found, or more than one place matches at the best level.
pub fn locate(keys: &Keys<'_>, target: Target<'_>, cursor: usize) -> Result<Place, Miss> {
    let len = keys.len();
    if target.headers.is_empty() && (target.lines.is_empty() || target.end_of_file) {
        // Nothing to search between the cursor and the end: an insertion appends, an end-of-file chunk sits at the end.
        let start = len.saturating_sub(target.lines.len());
        if target.lines.is_empty() {
            return Ok(Place {
                start: len,
                level: Level::Exact,
            });
        }
        if start < cursor || target.lines.len() > len {
            return Err(Miss::Lines);
        }
        return level_at(keys, target.lines, start)
            .map(|level| Place { start, level })
            .ok_or(Miss::Lines);
    }
    let patterns: Vec<Vec<Cow<'_, str>>> = Level::ALL
        .iter()
        .map(|level| target.lines.iter().map(|line| level.key(line)).collect())
        .collect();
    let headers: Vec<Vec<Cow<'_, str>>> = Level::ALL
        .iter()
        .map(|level| target.headers.iter().map(|line| level.key(line)).collect())
        .collect();
    let mut search = Search {
        keys,
        target,
        patterns,
        headers,
        found: Vec::new(),
        deepest: 0,
    };
    search.run(
        Region {
            start: cursor.min(len),
            end: len,
            header: None,
        },
        0,
    );
    let Some(best) = search.found.iter().map(|&(level, _)| level).min() else {
        return Err(if search.deepest < target.headers.len() {
            Miss::Header(search.deepest)
        } else {
            Miss::Lines
        });
    };
    let mut starts: Vec<usize> = search
        .found
        .iter()
        .filter(|&&(level, _)| level == best)
        .map(|&(_, start)| start)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    match starts.as_slice() {
        [start] => Ok(Place {
            start: *start,
            level: best,
        }),
        _ => Err(Miss::Ambiguous(starts)),
    }
}

/// The strictest level at which `lines` match the file at `start`.
fn level_at(keys: &Keys<'_>, lines: &[&str], start: usize) -> Option<Level> {
    Level::ALL.into_iter().find(|&level| {
        let pattern: Vec<Cow<'_, str>> = lines.iter().map(|line| level.key(line)).collect();
        keys.matches_at(level, &pattern, start)
    })
}

/// One search: every path through the headers, and the places of the lines that each path allows.
struct Search<'k, 'a, 't> {
    keys: &'k Keys<'a>,
    target: Target<'t>,
    /// The expected lines keyed at each level.
    patterns: Vec<Vec<Cow<'t, str>>>,
    /// The headers keyed at each level.
    headers: Vec<Vec<Cow<'t, str>>>,
    /// Every place found, with its level.
    found: Vec<(Level, usize)>,
    /// How many headers some path matched, for the error.
    deepest: usize,
}

impl Search<'_, '_, '_> {
    /// Searches header `depth` (or the lines, past the last header) in `region`; returns whether anything was found.
    fn run(&mut self, region: Region, depth: usize) -> bool {
        if depth == self.target.headers.len() {
            return self.lines_in(region);
        }
        let candidates = self.header_in(region, depth);
        if candidates.is_empty() {
            return false;
        }
        self.deepest = self.deepest.max(depth + 1);
        let mut any = false;
        for at in candidates {
            let (section, wide) = self.sections(at, region.end);
            let mut found = self.run(section, depth + 1);
            if !found && section != wide {
                found = self.run(wide, depth + 1);
            }
            any |= found;
        }
        any
    }

    /// The lines where header `depth` matches in `region`, at the strictest level that has any.
    fn header_in(&self, region: Region, depth: usize) -> Vec<usize> {
        for level in Level::ALL {
            let header = &self.headers[level as usize][depth];
            let lines = &self.keys.levels[level as usize];
            let hits: Vec<usize> = (region.start..region.end).filter(|&at| lines[at] == *header).collect();
            if !hits.is_empty() {
                return hits;
            }
        }
        Vec::new()
    }

    /// Records the places where the lines start in `region`, at the strictest level that has any.
    fn lines_in(&mut self, region: Region) -> bool {
        let len = self.keys.len();
        let count = self.target.lines.len();
        if count == 0 {
            // Only `+` lines: they go right after the last header, or at the end.
            let start = if self.target.end_of_file { len } else { region.start };
            self.found.push((Level::Exact, start));
            return true;
        }
        if count > len {
            return false;
        }
        let last_start = len - count;
        let first = region.header.unwrap_or(region.start);
        let starts = if self.target.end_of_file {
            // The lines must end the file, wherever the region ends.
            if last_start < first {
                return false;
            }
            last_start..last_start + 1
        } else {
            first..region.end.min(last_start + 1)
        };
        for level in Level::ALL {
            let pattern = &self.patterns[level as usize];
            let hits: Vec<usize> = starts
                .clone()
                .filter(|&start| self.keys.matches_at(level, pattern, start))
                .collect();
            if !hits.is_empty() {
                self.found.extend(hits.into_iter().map(|start| (level, start)));
                return true;
            }
        }
        false
    }

    /// The section of the header at line `at` (the deeper-indented lines after it) and the wide region (from the
    /// header to `end`). They are equal when no deeper line follows the header.
    fn sections(&self, at: usize, end: usize) -> (Region, Region) {
        let wide = Region {
            start: at + 1,
            end,
            header: Some(at),
        };
        let indents = &self.keys.indents;
        let Some(own) = indents[at] else {
            return (wide, wide);
        };
        let mut next = (at + 1..end).filter_map(|line| indents[line].map(|width| (line, width)));
        match next.next() {
            Some((_, width)) if width > own => {}
            _ => return (wide, wide),
        }
        let section_end = next.find(|&(_, width)| width <= own).map_or(end, |(line, _)| line);
        (
            Region {
                start: at + 1,
                end: section_end,
                header: Some(at),
            },
            wide,
        )
    }
}

#[cfg(test)]
#[path = "seek_tests.rs"]
mod tests;
