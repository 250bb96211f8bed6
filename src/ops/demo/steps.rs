//! The demo's steps are real `runner` commands, run as child processes of the real binary in the
//! demo's folder, their output (stdout and stderr, interleaved as written) captured for the
//! front end to show. One of them is killed on purpose, at a moment the scripted agent names.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;

/// What a step is there to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Planning, the chunks and their commits, the failed verification and its retry, until
    /// runner is killed in the middle of a chunk.
    Build,
    /// `runner status` right after the kill.
    Status,
    /// `runner recover`: the interrupted chunk's partial work is kept.
    Recover,
    /// `runner run` again: the next attempt continues from the partial work.
    Resume,
    Review,
    Merge,
    Undo,
}

/// One step: the command as a person would type it in the demo's folder, and what it printed.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub stage: Stage,
    /// The command line, shell-quoted, to run in the demo's folder.
    pub command: String,
    /// Its exit code; `None` when the demo killed it.
    pub exit_code: Option<i32>,
    /// The signal the demo killed it with (`"SIGKILL"`), if it did.
    pub killed_with: Option<String>,
    /// stdout and stderr as written.
    pub output: String,
}

/// Where and how the steps run.
pub struct Runner {
    /// The runner binary (the one running the demo).
    pub exe: PathBuf,
    /// The demo's repository; every step runs there.
    pub dir: PathBuf,
}

/// How long the killed step may take to reach its kill point before the demo gives up.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

impl Runner {
    /// `args` as a command line a person can type in the demo's folder.
    pub fn command_line(&self, args: &[&str]) -> String {
        let mut words = vec![crate::sh(self.exe.to_string_lossy())];
        words.extend(args.iter().map(crate::sh));
        words.join(" ")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args).current_dir(&self.dir).stdin(Stdio::null());
        // The steps are runs of their own: nothing of a session this demo may itself run in
        // (an agent's contract, a test's failpoints) may leak into them.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("RUNNER_") {
                cmd.env_remove(key);
            }
        }
        cmd
    }

    /// Run `args` to its end; an exit code other than `expect` is an error naming the step
    /// (after `report` has seen its output).
    pub fn run(
        &self,
        stage: Stage,
        args: &[&str],
        expect: i32,
        report: &mut dyn FnMut(&Step),
    ) -> anyhow::Result<Step> {
        let (child, output) = spawn_captured(self.command(args))?;
        let status = wait(child)?;
        let step = Step {
            stage,
            command: self.command_line(args),
            exit_code: status.code(),
            killed_with: None,
            output: join_output(output),
        };
        report(&step);
        if step.exit_code != Some(expect) {
            let ended = match step.exit_code {
                Some(code) => format!("exit code {code}"),
                None => "a signal".to_string(),
            };
            bail!(
                "the demo's step `{}` ended with {ended}, not {expect}; its output is above",
                step.command
            );
        }
        Ok(step)
    }

    /// Run `args` with `ready_env` naming a file, and SIGKILL the run the moment that file
    /// exists (the scripted agent creates it in the middle of a chunk).
    pub fn run_until_killed(
        &self,
        stage: Stage,
        args: &[&str],
        ready_env: &str,
        report: &mut dyn FnMut(&Step),
    ) -> anyhow::Result<Step> {
        let ready = self.dir.join(".git").join("runner-demo-ready");
        let mut cmd = self.command(args);
        cmd.env(ready_env, &ready);
        let (mut child, output) = spawn_captured(cmd)?;
        let reached = wait_for_file(&mut child, &ready);
        // SIGKILL, as a crash or a power cut would: runner gets no chance to tidy up.
        let _ = child.kill();
        let status = wait(child)?;
        let _ = std::fs::remove_file(&ready);
        let step = Step {
            stage,
            command: self.command_line(args),
            exit_code: status.code(),
            killed_with: reached.is_ok().then(|| "SIGKILL".to_string()),
            output: join_output(output),
        };
        report(&step);
        reached.map(|()| step)
    }
}

/// Start `cmd` with stdout and stderr into one pipe, read to its end by a thread.
fn spawn_captured(mut cmd: Command) -> anyhow::Result<(Child, JoinHandle<Vec<u8>>)> {
    let (mut reader, writer) = std::io::pipe().context("creating a pipe")?;
    cmd.stdout(writer.try_clone().context("creating a pipe")?)
        .stderr(writer);
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))?;
    // `cmd` holds the pipe's write ends until dropped: without this the read never ends.
    drop(cmd);
    let output = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        bytes
    });
    Ok((child, output))
}

fn wait(mut child: Child) -> anyhow::Result<std::process::ExitStatus> {
    child.wait().context("waiting for a demo step")
}

fn join_output(output: JoinHandle<Vec<u8>>) -> String {
    let bytes = output.join().unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Wait until `path` exists; an error if the child ends first or the time runs out.
fn wait_for_file(child: &mut Child, path: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    while !path.exists() {
        if let Some(status) = child.try_wait()? {
            bail!("the run ended ({status}) before the scripted agent reached its interruption");
        }
        if started.elapsed() > READY_TIMEOUT {
            bail!(
                "the scripted agent did not reach its interruption within {} s",
                READY_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
