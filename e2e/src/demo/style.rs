//! Terminal output for the demo: colour only when stdout is a terminal (and `NO_COLOR` is
//! unset), so piped output and test captures stay plain text.

use std::io::{IsTerminal, Write};

/// The colours the demo uses, by meaning rather than by hue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Timestamps and asides.
    Dim,
    /// Something waits (a gated replica).
    Waiting,
    /// Something ran (admitted, placed).
    Good,
    /// Something was lost (preempted).
    Bad,
    /// Headlines and the final count.
    Bold,
}

impl Tone {
    fn code(self) -> &'static str {
        match self {
            Tone::Dim => "2",
            Tone::Waiting => "33",
            Tone::Good => "32",
            Tone::Bad => "31",
            Tone::Bold => "1",
        }
    }
}

/// Where the demo writes: stdout, with or without colour.
#[derive(Clone, Copy, Debug, Default)]
pub struct Console {
    pub colour: bool,
}

impl Console {
    /// Colour when stdout is a terminal and the user did not ask for none.
    pub fn detect() -> Self {
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Self { colour }
    }

    /// `text` in `tone` (unchanged without colour).
    pub fn paint(&self, tone: Tone, text: &str) -> String {
        if self.colour {
            format!("\x1b[{}m{text}\x1b[0m", tone.code())
        } else {
            text.to_string()
        }
    }

    /// Prints one line. A closed stdout (the reader went away) is no reason to stop the
    /// sandbox, so write errors are ignored.
    pub fn line(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_console_leaves_text_alone() {
        let plain = Console { colour: false };
        assert_eq!(plain.paint(Tone::Bad, "preempted"), "preempted");
    }

    #[test]
    fn colour_console_wraps_and_resets() {
        let colour = Console { colour: true };
        assert_eq!(colour.paint(Tone::Good, "ok"), "\x1b[32mok\x1b[0m");
    }
}
