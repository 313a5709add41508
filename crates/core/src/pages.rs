//! Paginated reads that end: at most so many pages, and never a page token twice. A service
//! that answers every page with a next token (a fault, or a stand-in) would otherwise be asked
//! for ever, and some requests are billed.

use std::collections::BTreeSet;

/// Why a paginated read stopped before the service said it was done: for the reader to say
/// what was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// It read the most pages it reads.
    Limit(usize),
    /// The service gave a page token it had given before: asking again would go round.
    Repeated,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Limit(pages) => write!(f, "it stops after {pages} pages, the most it reads"),
            Stop::Repeated => f.write_str("the service gave a page token it had already given"),
        }
    }
}

/// The pages of one paginated read.
#[derive(Debug)]
pub struct Pages {
    limit: usize,
    read: usize,
    seen: BTreeSet<String>,
}

impl Pages {
    /// A read of at most `limit` pages.
    pub fn new(limit: usize) -> Pages {
        Pages { limit, read: 0, seen: BTreeSet::new() }
    }

    /// Counts a page read and takes the token it gave: `Ok(Some(token))` to ask for the next
    /// page with, `Ok(None)` when there is none, `Err` when it must not be asked for.
    pub fn next(&mut self, token: Option<&str>) -> Result<Option<String>, Stop> {
        self.read += 1;
        let Some(token) = token.filter(|t| !t.is_empty()) else { return Ok(None) };
        if !self.seen.insert(token.to_owned()) {
            return Err(Stop::Repeated);
        }
        if self.read >= self.limit {
            return Err(Stop::Limit(self.limit));
        }
        Ok(Some(token.to_owned()))
    }

    /// How many pages were read.
    pub fn read(&self) -> usize {
        self.read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_ends_at_its_last_page_its_limit_or_a_token_given_twice() {
        let mut pages = Pages::new(3);
        assert_eq!(pages.next(Some("a")), Ok(Some("a".to_owned())));
        assert_eq!(pages.next(None), Ok(None));
        let mut pages = Pages::new(3);
        assert_eq!(pages.next(Some("a")), Ok(Some("a".to_owned())));
        assert_eq!(pages.next(Some("b")), Ok(Some("b".to_owned())));
        assert_eq!(pages.next(Some("c")), Err(Stop::Limit(3)));
        assert_eq!(pages.read(), 3);
        let mut pages = Pages::new(100);
        assert_eq!(pages.next(Some("a")), Ok(Some("a".to_owned())));
        assert_eq!(pages.next(Some("b")), Ok(Some("b".to_owned())));
        assert_eq!(pages.next(Some("a")), Err(Stop::Repeated));
        // An empty token is no next page.
        assert_eq!(Pages::new(5).next(Some("")), Ok(None));
        assert_eq!(Stop::Limit(50).to_string(), "it stops after 50 pages, the most it reads");
    }
}
