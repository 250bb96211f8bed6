//! The real agent CLIs — Claude Code, Codex, Gemini CLI and aider, at the versions pinned in
//! `scripts/agent-clis/` and installed by `scripts/install-agent-clis` — driven by the real
//! runner against the scripted model server of `fixtures/model-server/` on loopback. Only the
//! model is scripted: the CLIs' sandboxes, permission rules, shells, session stores and error
//! handling are their own. Built with `--features real-clis` (`scripts/test` and CI do); the
//! CLIs are looked for in `$RUNNER_AGENT_CLIS/bin`, else `.agent-clis/bin` of the checkout, and
//! a missing one fails the test with the command that installs it.
//!
//! Each CLI gets a HOME of its own (its settings, login and session store), and every setting
//! that would reach the network (update checks, telemetry) is turned off there.

mod aider;
mod claude;
mod codex;
mod gemini;
mod harness;
