//! `gorag schemas`: the events' JSON Schemas, written or checked.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::events::schema;

#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// Folder to write `<event>.schema.json` into.
    #[arg(long, default_value = "schemas")]
    pub out: PathBuf,
    /// Only check that the files are up to date.
    #[arg(long)]
    pub check: bool,
}

pub fn schemas(args: SchemasArgs) -> Result<()> {
    let mut stale = Vec::new();
    for (name, value) in schema::all() {
        let path = args.out.join(format!("{name}.schema.json"));
        let text = schema::render(&value);
        if args.check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        } else {
            std::fs::create_dir_all(&args.out)?;
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        bail!("out of date (run `gorag schemas`): {}", stale.join(", "));
    }
    Ok(())
}
