//! `gorag report`: the label space of a stopped service's state, as an HTML map and JSON.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::discovery::{label_map, map_html};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The service's state directory (stop the service first: one process per database).
    #[arg(long)]
    pub dir: PathBuf,
    /// The HTML page to write; the same data goes beside it as JSON (`.json`).
    #[arg(long, default_value = "labels.html")]
    pub out: PathBuf,
}

/// Draw the active labels of a state directory, grouped by the keywords they share.
pub fn report(args: ReportArgs) -> Result<()> {
    if args.out.extension().is_some_and(|e| e == "json") {
        bail!("--out is the HTML page; the JSON goes beside it (give e.g. labels.html)");
    }
    let (engine, _) = super::serve::load_state(&args.dir)?;
    let map = label_map::label_map(&engine, &BTreeMap::new(), &HashMap::new())
        .context("grouping the labels")?;
    let title = format!("{} active labels", map.labels.len());
    std::fs::write(&args.out, map_html::html(&title, &map, None))
        .with_context(|| format!("writing {}", args.out.display()))?;
    let json = args.out.with_extension("json");
    std::fs::write(&json, serde_json::to_string_pretty(&map)?)
        .with_context(|| format!("writing {}", json.display()))?;
    println!(
        "{} labels in {} communities: wrote {} and {}",
        map.labels.len(),
        map.groups,
        args.out.display(),
        json.display()
    );
    Ok(())
}
