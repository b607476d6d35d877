//! The confidence figure: a reliability diagram and the accuracy of the most confident texts by
//! coverage, side by side, for each strategy's last round.

use std::fmt::Write as _;

use super::{escape, svg_open, EvalReport, COLOURS};

/// The last round's calibration per strategy, as a self-contained SVG: a reliability diagram
/// and the accuracy of the most confident texts by coverage, side by side.
pub fn confidence_svg(report: &EvalReport) -> String {
    let reliability = Panel::new(60.0, "reliability (last round)");
    let coverage = Panel::new(470.0, "accuracy by coverage (most confident first)");
    let height = Panel::TOP + Panel::SIZE + 62.0 + 18.0 * report.runs.len() as f64;
    let mut out = svg_open(800.0, height);
    let _ = writeln!(
        out,
        r#"<text x="400" y="20" text-anchor="middle" font-size="14">{} {}-shot: confidence ({})</text>"#,
        escape(&report.dataset),
        report.shots,
        escape(&report.model)
    );
    reliability.axes(&mut out, "mean confidence");
    reliability.diagonal(&mut out);
    coverage.axes(&mut out, "coverage");
    for (i, run) in report.runs.iter().enumerate() {
        let Some(m) = run.rounds.last() else { continue };
        let colour = COLOURS[i % COLOURS.len()];
        let c = &m.calibration;
        let name = escape(&run.strategy);
        reliability.series(&mut out, colour, &name, &reliability_points(&c.bins));
        reliability.legend(&mut out, i, colour, &format!("{name} (ECE {:.3})", c.ece));
        coverage.series(&mut out, colour, &name, &coverage_points(&c.curve));
        coverage.legend(&mut out, i, colour, &name);
    }
    out.push_str("</svg>\n");
    out
}

/// (mean confidence, accuracy) of the bins that hold texts.
fn reliability_points(bins: &[(usize, f64, f64)]) -> Vec<(f64, f64)> {
    bins.iter()
        .filter(|b| b.0 > 0)
        .map(|&(_, confidence, accuracy)| (confidence, accuracy))
        .collect()
}

/// (coverage i/n, accuracy of the most confident share) for i = 1..=n.
fn coverage_points(curve: &[f64]) -> Vec<(f64, f64)> {
    let n = curve.len() as f64;
    curve
        .iter()
        .enumerate()
        .map(|(i, &accuracy)| ((i + 1) as f64 / n, accuracy))
        .collect()
}

/// One square panel of the confidence chart: 0–1 on both axes, its title above, its legend
/// below.
struct Panel {
    left: f64,
    title: &'static str,
}

impl Panel {
    const TOP: f64 = 60.0;
    const SIZE: f64 = 300.0;

    fn new(left: f64, title: &'static str) -> Self {
        Self { left, title }
    }

    fn x(&self, value: f64) -> f64 {
        self.left + Self::SIZE * value.clamp(0.0, 1.0)
    }

    fn y(&self, value: f64) -> f64 {
        Self::TOP + Self::SIZE * (1.0 - value.clamp(0.0, 1.0))
    }

    /// The title, grid lines with ticks at 0, 0.5 and 1 on both axes, and the axes' titles.
    fn axes(&self, out: &mut String, x_title: &str) {
        let (left, top, size) = (self.left, Self::TOP, Self::SIZE);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
            left + size / 2.0,
            top - 12.0,
            self.title
        );
        for value in [0.0, 0.5, 1.0] {
            let (x, y) = (self.x(value), self.y(value));
            let _ = writeln!(
                out,
                r##"<line x1="{left}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{value:.1}</text>"##,
                left + size,
                left - 6.0,
                y + 4.0,
            );
            let _ = writeln!(
                out,
                r##"<line x1="{x}" x2="{x}" y1="{top}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{value:.1}</text>"##,
                top + size,
                top + size + 16.0,
            );
        }
        let (mid_y, label_x) = (top + size / 2.0, left - 40.0);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{x_title}</text><text x="{label_x}" y="{mid_y}" transform="rotate(-90 {label_x} {mid_y})" text-anchor="middle">accuracy</text>"#,
            left + size / 2.0,
            top + size + 34.0,
        );
    }

    /// Perfect calibration, y = x, dashed grey.
    fn diagonal(&self, out: &mut String) {
        let _ = writeln!(
            out,
            r##"<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#999" stroke-dasharray="5,4"/>"##,
            self.x(0.0),
            self.x(1.0),
            self.y(0.0),
            self.y(1.0)
        );
    }

    /// One strategy's line and its points (with their values as tooltips); nothing without
    /// points. `name` is already escaped.
    fn series(&self, out: &mut String, colour: &str, name: &str, points: &[(f64, f64)]) {
        if points.is_empty() {
            return;
        }
        let coords: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.x(x), self.y(y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            coords.join(" ")
        );
        for &(x, y) in points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"><title>{name}: {x:.3} → {y:.4}</title></circle>"#,
                self.x(x),
                self.y(y),
            );
        }
    }

    /// The `i`th legend entry below the panel; `text` is already escaped.
    fn legend(&self, out: &mut String, i: usize, colour: &str, text: &str) {
        let ly = Self::TOP + Self::SIZE + 56.0 + 18.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{text}</text>"#,
            self.left,
            self.left + 25.0,
            self.left + 31.0,
            ly + 4.0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::report;
    use super::*;

    #[test]
    fn confidence_svg_draws_both_panels_per_strategy() {
        let mut report = report();
        let last = report.runs[0].rounds.last_mut().unwrap();
        let mut bins = vec![(0, 0.0, 0.0); 10];
        bins[5] = (2, 0.55, 0.5);
        bins[9] = (3, 0.95, 1.0);
        last.calibration = crate::eval::calibration::Calibration {
            ece: 0.0433,
            bins,
            curve: (1..=20).map(|i| 1.0 - i as f64 / 40.0).collect(),
            ..Default::default()
        };
        let mut second = report.runs[0].clone();
        second.strategy = "flat<1>".into();
        report.runs.push(second);
        let svg = confidence_svg(&report);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("toy&lt;&amp;&gt;") && svg.contains("flat&lt;1&gt; (ECE 0.043)"));
        assert!(svg.contains("reliability (last round)"));
        assert!(svg.contains("accuracy by coverage (most confident first)"));
        // Two strategies × two panels; points: two non-empty bins and 20 coverages each.
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 2 * (2 + 20));
        assert!(svg.contains("stroke-dasharray"));
        // Bin (0.95, 1.0) in the left panel: x = 60 + 300 * 0.95, y = 60.
        assert!(svg.contains("cx=\"345.0\" cy=\"60.0\""));
    }
}
