//! SVG plots of a comparison, drawn with `plotters` (SVG backend only: text goes into the
//! SVG as `<text>` elements and plotters estimates its size without any font crate).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::metrics::Outcome;
use super::model::{Mode, Policy, Workers, format_duration};

/// A short label for an axis: `off`, `FCFS 30s`, `LD 30s`.
fn short_label(mode: &Mode) -> String {
    match mode {
        Mode::Uncoordinated => "off".to_string(),
        Mode::Orchestrated {
            policy,
            timeout,
            workers,
        } => {
            let p = match policy {
                Policy::FirstComeFirstServed => "FCFS",
                Policy::LeastDisruption => "LD",
                Policy::SoonestRoom => "SR",
            };
            let kueue = match workers {
                Workers::Baton => "",
                Workers::Kueue => " K",
                Workers::BatonReleasing => " R",
            };
            format!("{p} {}{kueue}", format_duration(*timeout))
        }
    }
}

fn color(mode: &Mode) -> RGBColor {
    match mode {
        Mode::Uncoordinated => RGBColor(0xd6, 0x27, 0x28),
        Mode::Orchestrated {
            policy: Policy::FirstComeFirstServed,
            ..
        } => RGBColor(0x1f, 0x77, 0xb4),
        Mode::Orchestrated {
            policy: Policy::LeastDisruption,
            ..
        } => RGBColor(0x2c, 0xa0, 0x2c),
        Mode::Orchestrated {
            policy: Policy::SoonestRoom,
            ..
        } => RGBColor(0x94, 0x67, 0xbd),
    }
}

/// Two bar panels — wasted victims, and high-priority p99 time to admission, per mode — and
/// the trade-off: each mode as a point, wasted victims against the p99 wait.
pub fn comparison_svg(outcomes: &[Outcome]) -> Result<String, String> {
    let mut svg = String::new();
    {
        // Wide enough for every bar's label: 48 px a mode per panel, at least 460.
        let panel = u32::try_from(outcomes.len())
            .unwrap_or(u32::MAX)
            .saturating_mul(48)
            .max(460);
        let root =
            SVGBackend::with_string(&mut svg, (panel.saturating_mul(3), 340)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((1, 3));
        let wasted: Vec<f64> = outcomes.iter().map(|o| o.wasted as f64).collect();
        let p99: Vec<f64> = outcomes.iter().map(|o| o.high_wait.p99).collect();
        bars(
            &panels[0],
            "Wasted victims (evicted for nothing)",
            outcomes,
            &wasted,
            0,
        )
        .map_err(|e| e.to_string())?;
        bars(&panels[1], "High-priority wait p99 (s)", outcomes, &p99, 1)
            .map_err(|e| e.to_string())?;
        trade_off(&panels[2], outcomes, &p99, &wasted).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    outcomes: &[Outcome],
    values: &[f64],
    decimals: usize,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let top = values.iter().copied().fold(0.0, f64::max).max(1.0) * 1.18;
    let labels: Vec<String> = outcomes.iter().map(|o| short_label(&o.mode)).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(52)
        .build_cartesian_2d((0..values.len()).into_segmented(), 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(values.len() + 1)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_label_style(("sans-serif", 12))
        .y_label_style(("sans-serif", 12))
        .draw()?;
    chart.draw_series(outcomes.iter().zip(values).enumerate().map(|(i, (o, v))| {
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), *v),
            ],
            color(&o.mode).filled(),
        );
        bar.set_margin(0, 0, 6, 6);
        bar
    }))?;
    chart.draw_series(values.iter().enumerate().map(|(i, v)| {
        Text::new(
            format!("{v:.decimals$}"),
            (SegmentValue::CenterOf(i), *v + top * 0.06),
            ("sans-serif", 12).into_font().color(&BLACK).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Bottom,
                ),
            ),
        )
    }))?;
    Ok(())
}

/// Each mode as a labelled point: wasted victims (y) against the high-priority p99 wait (x).
/// Lower left is better.
fn trade_off<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    outcomes: &[Outcome],
    p99: &[f64],
    wasted: &[f64],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let right = p99.iter().copied().fold(0.0, f64::max).max(1.0) * 1.15;
    let top = wasted.iter().copied().fold(0.0, f64::max).max(1.0) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Wasted victims against p99 wait (lower left is better)",
            ("sans-serif", 15),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(52)
        .build_cartesian_2d(0f64..right, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("high-priority wait p99 (s)")
        .x_label_style(("sans-serif", 12))
        .y_label_style(("sans-serif", 12))
        .draw()?;
    chart.draw_series(
        outcomes
            .iter()
            .zip(p99.iter().zip(wasted))
            .map(|(o, (&x, &y))| Circle::new((x, y), 5, color(&o.mode).filled())),
    )?;
    chart.draw_series(
        outcomes
            .iter()
            .zip(p99.iter().zip(wasted))
            .map(|(o, (&x, &y))| {
                Text::new(
                    short_label(&o.mode),
                    (x, y + top * 0.03),
                    ("sans-serif", 11).into_font().color(&BLACK).pos(
                        plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Right,
                            plotters::style::text_anchor::VPos::Bottom,
                        ),
                    ),
                )
            }),
    )?;
    Ok(())
}
