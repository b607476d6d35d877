//! The label map as one self-contained HTML page: an SVG map (a circle per label, coloured by
//! community, sized by volume, ringed red by its hallucination rate; its strongest links), the
//! communities as lists, and the proposals.

use std::fmt::Write;

use super::label_map::LabelMap;
use super::Proposal;

/// Side of the map, in pixels.
const SIDE: f64 = 900.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A distinct colour per community (hues around the wheel).
fn colour(group: usize) -> String {
    let hue = (group * 137) % 360;
    format!("hsl({hue}, 60%, 55%)")
}

/// `proposals`: None when the source has none to show (the section is left out).
pub fn html(title: &str, map: &LabelMap, proposals: Option<&[Proposal]>) -> String {
    let with_traffic = map.labels.iter().any(|l| l.traffic.is_some());
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>body{{font-family:sans-serif;margin:1.5em;color:#222}}svg{{background:#fafafa;\
         border:1px solid #ddd}}td,th{{padding:2px 8px;text-align:left;vertical-align:top}}\
         .k{{color:#666;font-size:90%}}</style></head><body>\n<h1>{t}</h1>\n<p>{n} active labels \
         in {g} communities (joined by shared keywords{c}).{legend} Hover a circle for its \
         keywords.</p>\n",
        t = escape(title),
        n = map.labels.len(),
        g = map.groups,
        c = if with_traffic {
            " and observed confusions"
        } else {
            ""
        },
        legend = if with_traffic {
            " Circle size: predicted volume; red ring: hallucination rate."
        } else {
            ""
        },
    );
    svg(&mut out, map);
    communities_table(&mut out, map);
    if let Some(proposals) = proposals {
        proposals_table(&mut out, proposals);
    }
    out.push_str("</body></html>\n");
    out
}

fn svg(out: &mut String, map: &LabelMap) {
    let max_volume = map
        .labels
        .iter()
        .filter_map(|l| l.traffic.map(|t| t.volume))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let max_link = map
        .links
        .iter()
        .map(|l| l.2)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{SIDE}\" height=\"{SIDE}\" viewBox=\"0 0 {SIDE} {SIDE}\">"
    );
    for &(a, b, w) in &map.links {
        let (la, lb) = (&map.labels[a], &map.labels[b]);
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-opacity=\"{:.2}\"/>",
            la.x * SIDE,
            la.y * SIDE,
            lb.x * SIDE,
            lb.y * SIDE,
            0.1 + 0.5 * w / max_link
        );
    }
    for label in &map.labels {
        let (radius, ring, tip) = match label.traffic {
            Some(t) => {
                let rate = t.hallucinations as f64 / t.volume.max(1) as f64;
                (
                    4.0 + 10.0 * (t.volume as f64 / max_volume).sqrt(),
                    (rate * 20.0).min(4.0),
                    format!(
                        "{} predicted, {:.1} % hallucinations",
                        t.volume,
                        100.0 * rate
                    ),
                )
            }
            None => (6.0, 0.0, String::new()),
        };
        let _ = writeln!(
            out,
            "<g><title>{id} — {kw}{sep}{tip}</title><circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{radius:.1}\" \
             fill=\"{fill}\" stroke=\"#c00\" stroke-width=\"{ring:.1}\"/><text x=\"{tx:.1}\" y=\"{y:.1}\" \
             font-size=\"9\" dominant-baseline=\"middle\">{id}</text></g>",
            id = escape(&label.id),
            kw = escape(&label.keywords.join(", ")),
            sep = if tip.is_empty() { "" } else { " — " },
            x = label.x * SIDE,
            y = label.y * SIDE,
            tx = label.x * SIDE + radius + 2.0,
            fill = colour(label.group),
        );
    }
    out.push_str("</svg>\n");
}

fn communities_table(out: &mut String, map: &LabelMap) {
    out.push_str("<h2>Communities</h2>\n<table>\n");
    for group in 0..map.groups {
        let members: Vec<String> = map
            .labels
            .iter()
            .filter(|l| l.group == group)
            .map(|l| escape(&l.id))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td style=\"color:{}\">●</td><td>{}</td><td>{}</td></tr>",
            colour(group),
            members.len(),
            members.join(", ")
        );
    }
    out.push_str("</table>\n");
}

fn proposals_table(out: &mut String, proposals: &[Proposal]) {
    let _ = writeln!(out, "<h2>Proposed classes ({})</h2>", proposals.len());
    if proposals.is_empty() {
        out.push_str("<p>None open.</p>\n");
        return;
    }
    out.push_str(
        "<table><tr><th>id</th><th>name</th><th>size</th><th>keywords</th><th>excerpt</th></tr>\n",
    );
    for p in proposals {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"k\">{}</td><td class=\"k\">{}</td></tr>",
            escape(&p.id),
            escape(&p.name),
            p.size,
            escape(&p.keywords.join(", ")),
            escape(p.excerpts.first().map_or("", String::as_str))
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::label_map::{LabelTraffic, MappedLabel};

    #[test]
    fn the_page_is_self_contained_and_escapes_what_it_shows() {
        let map = LabelMap {
            labels: vec![
                MappedLabel {
                    id: "a<b".into(),
                    group: 0,
                    x: 0.2,
                    y: 0.3,
                    keywords: vec!["x & y".into()],
                    traffic: Some(LabelTraffic {
                        volume: 4,
                        hallucinations: 1,
                    }),
                },
                MappedLabel {
                    id: "c".into(),
                    group: 1,
                    x: 0.7,
                    y: 0.6,
                    keywords: Vec::new(),
                    traffic: None,
                },
            ],
            links: vec![(0, 1, 1.0)],
            groups: 2,
        };
        let page = html("Labels", &map, Some(&[]));
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<svg"));
        assert!(page.contains("a&lt;b"));
        assert!(page.contains("x &amp; y"));
        assert!(page.contains("25.0 % hallucinations"));
        assert!(!page.contains("http://") || page.matches("http://").count() == 1);
        assert_eq!(page.matches("<circle").count(), 2);
        assert_eq!(page.matches("<line").count(), 1);
        assert!(page.contains("Proposed classes (0)"));
        assert!(!html("Labels", &map, None).contains("Proposed classes"));
    }
}
