//! The CLI's one error type: one line for the user, and the exit code.

use std::fmt;

/// Exit code for bad input found before anything runs.
pub const INPUT_ERROR: i32 = 2;

/// A failure reported to the user as one line on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// What went wrong, naming the file, line, counter or flag at fault.
    pub message: String,
    /// The process exit code.
    pub exit_code: i32,
}

impl CliError {
    /// Bad input (arguments, files, counters): exit code 2.
    pub fn input(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            exit_code: INPUT_ERROR,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keep the promise of one line whatever the message holds.
        f.write_str(&self.message.replace('\n', " "))
    }
}

impl std::error::Error for CliError {}
