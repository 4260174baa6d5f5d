//! Running the application once per pass.

use crate::error::CliError;
use crate::planning::ProfilePlan;

/// Runs `app` once per run of `plan` and writes the results. Returns the exit code to leave
/// with.
pub fn run(plan: &ProfilePlan, app: &[String], continue_on_error: bool) -> Result<i32, CliError> {
    let _ = (plan, app, continue_on_error);
    Err(CliError {
        message: "running applications is not available yet; use --plan to see the passes".into(),
        exit_code: 1,
    })
}
