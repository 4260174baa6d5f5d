//! Output path templates, with rocprofv3's keys: `%pid%`, `%hostname%`, `%rank%` and the others
//! make one directory per process, host or MPI/Slurm/torchrun rank; `%env{NAME}%` takes an
//! environment variable. Every key is also accepted as `{key}`.

/// Environment variables that give a process's rank, in the order they are consulted.
pub const RANK_VARIABLES: [&str; 9] = [
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "SLURM_PROCID",
    "RANK",
    "LOCAL_RANK",
    "MPI_RANK",
    "MPI_LOCALRANKID",
    "MPI_RANKID",
    "MV2_COMM_WORLD_RANK",
];

/// Environment variables that give the number of ranks, in the order they are consulted.
pub const SIZE_VARIABLES: [&str; 6] = [
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "SLURM_NTASKS",
    "WORLD_SIZE",
    "MPI_SIZE",
    "MV2_COMM_WORLD_SIZE",
];

/// The first of `variables` set (and not blank) in `lookup`.
pub fn first_set(variables: &[&str], lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    variables
        .iter()
        .find_map(|v| lookup(v).filter(|s| !s.trim().is_empty()))
        .map(|s| s.trim().to_string())
}

/// This machine's host name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// What the keys of a template stand for.
pub struct Context<'a> {
    /// `%pid%`, `%p`.
    pub pid: u32,
    /// `%ppid%`.
    pub ppid: u32,
    /// `%pgid%`.
    pub pgid: u32,
    /// `%psid%`.
    pub psid: u32,
    /// `%psize%`: the number of children of the parent process.
    pub psize: usize,
    /// `%hostname%`, `%h`.
    pub hostname: String,
    /// `%cwd%`.
    pub cwd: String,
    /// The application and its arguments (`%argv%`, `%args%`, `%argt%`, `%tag%`, `%argN%`).
    pub app: &'a [String],
    /// Seconds since the epoch at launch (`%launch_date%`, `%launch_time%`, in UTC).
    pub launch: u64,
    /// The environment (`%env{NAME}%`, `%rank%`, `%size%`, `%job%`).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl Context<'_> {
    /// The value of `key` (without its delimiters), if it is one.
    fn value(&self, key: &str) -> Option<String> {
        let rank = || first_set(&RANK_VARIABLES, self.env);
        let tag = || {
            self.app
                .first()
                .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        };
        Some(match key {
            "argv" => self.app.join(" "),
            "args" => self.app.get(1..).unwrap_or_default().join(" "),
            "argt" => {
                let mut words = vec![tag().unwrap_or_default()];
                words.extend(self.app.iter().skip(1).cloned());
                words.join(" ")
            }
            "tag" => tag().unwrap_or_default(),
            "hostname" | "h" => self.hostname.clone(),
            "pid" | "p" => self.pid.to_string(),
            "ppid" => self.ppid.to_string(),
            "pgid" => self.pgid.to_string(),
            "psid" => self.psid.to_string(),
            "psize" => self.psize.to_string(),
            "job" | "j" => (self.env)("SLURM_JOB_ID")
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "0".into()),
            "rank" | "r" => rank().unwrap_or_else(|| "0".into()),
            "size" | "s" => first_set(&SIZE_VARIABLES, self.env).unwrap_or_else(|| "1".into()),
            "nid" => rank().unwrap_or_else(|| self.pid.to_string()),
            "cwd" => self.cwd.clone(),
            "launch_date" => date(self.launch).0,
            "launch_time" => {
                let (day, hour, minute) = date(self.launch);
                format!("{day}_{hour:02}.{minute:02}")
            }
            _ => {
                let n: usize = key.strip_prefix("arg")?.parse().ok()?;
                self.app.get(n).cloned().unwrap_or_default()
            }
        })
    }

    /// `name`'s value as a path part: leading spaces, tabs and `/` dropped, the others `_`.
    fn env_part(&self, name: &str) -> String {
        let value = (self.env)(name).unwrap_or_default();
        value
            .trim_start_matches([' ', '\t', '/'])
            .replace([' ', '\t', '/'], "_")
    }
}

/// `YYYY-MM-DD`, hour and minute of `seconds` since the epoch, in UTC.
fn date(seconds: u64) -> (String, u64, u64) {
    let days = (seconds / 86_400) as i64;
    let of_day = seconds % 86_400;
    // Days to civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        of_day / 3600,
        of_day % 3600 / 60,
    )
}

/// Replaces one key of `text`, the first found, or returns `None` when there is none.
fn expand_once(text: &str, context: &Context<'_>) -> Option<String> {
    for (i, c) in text.char_indices() {
        let rest = &text[i..];
        // %env{NAME}%, $env{NAME} (also ENV), the name of capitals, digits and _.
        for (open, close) in [
            ("%env{", "}%"),
            ("%ENV{", "}%"),
            ("$env{", "}"),
            ("$ENV{", "}"),
        ] {
            if let Some(after) = rest.strip_prefix(open) {
                if let Some(end) = after.find(close) {
                    let name = &after[..end];
                    if !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                    {
                        let tail = &after[end + close.len()..];
                        return Some(format!("{}{}{tail}", &text[..i], context.env_part(name)));
                    }
                }
            }
        }
        let (close, body) = match c {
            '%' => ('%', &rest[1..]),
            '{' => ('}', &rest[1..]),
            _ => continue,
        };
        if let Some(end) = body.find(close) {
            if let Some(value) = context.value(&body[..end]) {
                let tail = &body[end + 1..];
                return Some(format!("{}{value}{tail}", &text[..i]));
            }
        }
        // The one-letter forms, %h %p %j %r %s, not followed by a letter or digit.
        if c == '%' {
            let mut chars = body.chars();
            if let Some(letter @ ('h' | 'p' | 'j' | 'r' | 's')) = chars.next() {
                if !chars
                    .next()
                    .is_some_and(|n| n.is_ascii_alphanumeric() || n == '_')
                {
                    let value = context.value(&letter.to_string())?;
                    return Some(format!("{}{value}{}", &text[..i], &body[1..]));
                }
            }
        }
    }
    None
}

/// Replaces every key of `template` with its value in `context`, again while the values hold
/// keys themselves (at most 64 replacements, so a variable naming itself ends).
pub fn expand(template: &str, context: &Context<'_>) -> String {
    let mut text = template.to_string();
    for _ in 0..64 {
        match expand_once(&text, context) {
            Some(next) => text = next,
            None => break,
        }
    }
    text
}

/// [`expand`] for this process, which runs `app`.
pub fn expand_here(template: &str, app: &[String]) -> String {
    let pid = nix::unistd::getpid().as_raw() as u32;
    let ppid = nix::unistd::getppid().as_raw() as u32;
    expand_with(template, app, pid, ppid)
}

/// [`expand`] for the application process `pid` this process ran (its parent): the names of
/// a process's own files, as rocprofv3 names them in the application.
pub fn expand_for_process(template: &str, app: &[String], pid: u32) -> String {
    expand_with(template, app, pid, nix::unistd::getpid().as_raw() as u32)
}

fn expand_with(template: &str, app: &[String], pid: u32, ppid: u32) -> String {
    use nix::unistd::{getpgid, getsid};
    let psize = std::fs::read_to_string(format!("/proc/{ppid}/task/{ppid}/children"))
        .map(|s| s.split_whitespace().count())
        .unwrap_or(1);
    let env = |name: &str| std::env::var(name).ok();
    let context = Context {
        pid,
        ppid,
        pgid: getpgid(None).map_or(0, |p| p.as_raw() as u32),
        psid: getsid(None).map_or(0, |p| p.as_raw() as u32),
        psize,
        hostname: hostname(),
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        app,
        launch: launch_time(),
        env: &env,
    };
    expand(template, &context)
}

/// Seconds since the epoch when this process started expanding paths (one value per run, so
/// every path of the run names the same minute).
fn launch_time() -> u64 {
    static LAUNCH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LAUNCH.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn every_key_expands_in_both_forms() {
        let app: Vec<String> = ["/opt/bin/app", "-n", "4"].map(String::from).to_vec();
        let lookup = env(&[
            ("HOME", "/home/ann"),
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_JOB_ID", "77"),
            ("OUT", "%pid%/x"),
            ("SPACED", " a b"),
            ("LOOP", "%env{LOOP}%"),
        ]);
        let context = Context {
            pid: 42,
            ppid: 41,
            pgid: 40,
            psid: 39,
            psize: 2,
            hostname: "node7".into(),
            cwd: "/work".into(),
            app: &app,
            launch: 1_763_930_000,
            env: &lookup,
        };
        let cases = [
            ("out/%hostname%/%rank%/p%pid%", "out/node7/3/p42"),
            ("{hostname}/{pid}_{ppid}", "node7/42_41"),
            ("%pgid%-%psid%-%psize%", "40-39-2"),
            ("%job%-%size%-%nid%", "77-8-3"),
            ("%h-%p-%j-%r-%s", "node7-42-77-3-8"),
            ("%tag%|%args%|%argt%", "app|-n 4|app -n 4"),
            ("%argv%", "/opt/bin/app -n 4"),
            ("%arg1%%arg2%%arg9%", "-n4"),
            ("%cwd%", "/work"),
            ("%launch_date%", "2025-11-23"),
            ("%launch_time%", "2025-11-23_20.33"),
            ("d/%env{HOME}%", "d/home_ann"),
            ("d/$env{HOME}", "d/home_ann"),
            ("d/%ENV{SPACED}%", "d/a_b"),
            ("d/%env{UNSET}%x", "d/x"),
            ("%env{OUT}%", "42_x"),
            ("%env{lower}%/%unknown%/100%", "%env{lower}%/%unknown%/100%"),
            ("%pidfile", "%pidfile"),
            ("%env{LOOP}%", "%env{LOOP}%"),
        ];
        for (template, expanded) in cases {
            assert_eq!(expand(template, &context), expanded, "{template}");
        }
    }

    #[test]
    fn ranks_come_from_the_first_variable_set() {
        let rank = |lookup: &dyn Fn(&str) -> Option<String>| first_set(&RANK_VARIABLES, lookup);
        assert_eq!(rank(&env(&[])), None);
        assert_eq!(
            rank(&env(&[("LOCAL_RANK", "5"), ("SLURM_PROCID", "2")])).as_deref(),
            Some("2")
        );
        assert_eq!(
            rank(&env(&[("PMI_RANK", "1"), ("OMPI_COMM_WORLD_RANK", "4")])).as_deref(),
            Some("4")
        );
        assert_eq!(rank(&env(&[("RANK", " 9 ")])).as_deref(), Some("9"));
        assert_eq!(
            rank(&env(&[("MV2_COMM_WORLD_RANK", "6")])).as_deref(),
            Some("6")
        );
    }
}
