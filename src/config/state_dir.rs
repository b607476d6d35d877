//! Where `state.dir` is when the configuration leaves it out: a folder of the user's, never
//! the working directory (docs/guide/configuration.md, "The state folder").

use std::path::{Path, PathBuf};

/// The variables [`default_state_dir`] reads, in order.
pub const STATE_DIR_VARS: [&str; 3] = ["GORAG_HOME", "XDG_DATA_HOME", "HOME"];

/// `state.dir` is not set and there is no folder to put it under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "state.dir: not set, and no folder to default to: GORAG_HOME, when set, must be an absolute \
     path ($GORAG_HOME/state), and without it XDG_DATA_HOME or HOME must be one \
     (…/gorag/state, …/.local/share/gorag/state); set state.dir, or GORAG_HOME"
)]
pub struct NoStateDir;

/// The default state folder, with `var` reading the environment:
///
/// 1. `$GORAG_HOME/state` when `GORAG_HOME` is set — it must then be an absolute path (a
///    relative one would follow the working directory, which is what this default avoids);
/// 2. else `$XDG_DATA_HOME/gorag/state` (a relative `XDG_DATA_HOME` is ignored, as the XDG
///    base directory specification says);
/// 3. else `$HOME/.local/share/gorag/state`.
///
/// An empty variable counts as unset. None of them usable: [`NoStateDir`].
pub fn default_state_dir(var: impl Fn(&str) -> Option<String>) -> Result<PathBuf, NoStateDir> {
    let [gorag_home, xdg_data_home, home] = STATE_DIR_VARS;
    let set = |name: &str| {
        var(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = set(gorag_home) {
        return if dir.is_absolute() {
            Ok(dir.join("state"))
        } else {
            Err(NoStateDir)
        };
    }
    let data = set(xdg_data_home)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            set(home)
                .filter(|dir| dir.is_absolute())
                .map(|home| home.join(".local").join("share"))
        })
        .ok_or(NoStateDir)?;
    Ok(data.join("gorag").join("state"))
}

/// `state.dir`, when the layers left it out, set to the default under `env` (the layers'
/// environment). Not found, it stays unset: [`super::StateSection::dir`] says so to the command
/// that opens the state (`gorag serve`); the others never read it.
pub(super) fn fill_in(state: &mut super::StateSection, env: &[(String, String)]) {
    if state.dir.is_none() {
        state.dir = default_state_dir(|name| {
            env.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
        .ok();
    }
}

impl super::StateSection {
    /// The sled database's folder: `state.dir` as configured, or the default that
    /// [`super::ServeConfig::load`] found ([`default_state_dir`]).
    pub fn dir(&self) -> Result<&Path, NoStateDir> {
        self.dir.as_deref().ok_or(NoStateDir)
    }
}
