//! The probe's objective, scikit-learn's multinomial logistic loss with `C = 1` and the biases
//! unpenalised, and its minimiser, L-BFGS: written out so that the same material gives the
//! same weights, bit for bit, on every replica.

use super::{logit, Features};

/// Inverse regularisation strength, scikit-learn's default.
const C: f64 = 1.0;
/// L-BFGS iterations at most (scikit-learn's default), and the pairs it remembers.
const MAX_ITERATIONS: usize = 100;
pub(super) const MEMORY: usize = 10;
/// Stop when the gradient's largest component falls below this (scikit-learn's default `tol`):
/// on texts whose words no other text shares the objective flattens slowly, and a tighter
/// stop (1e-6, 500 iterations) spent seconds a round on long texts.
const TOLERANCE: f64 = 1e-4;

/// The fit's objective: `½‖W‖² + C · Σ cross-entropy` (the biases not penalised).
pub(super) struct Problem<'a, 'f> {
    pub(super) features: &'a [Features<'f>],
    pub(super) targets: &'a [usize],
    pub(super) classes: usize,
    pub(super) dim: usize,
    pub(super) row: usize,
}

impl Problem<'_, '_> {
    /// The objective at `w` and its gradient.
    pub(super) fn evaluate(&self, w: &[f64]) -> (f64, Vec<f64>) {
        let mut gradient = vec![0.0; w.len()];
        let mut loss = 0.0;
        for class in 0..self.classes {
            let range = class_range(class, self.row);
            let weights = &w[range.clone()][..self.row - 1];
            gradient[range][..self.row - 1].copy_from_slice(weights);
            loss += 0.5 * weights.iter().map(|x| x * x).sum::<f64>();
        }
        let mut p = vec![0.0; self.classes];
        for (features, &target) in self.features.iter().zip(self.targets) {
            for (class, z) in p.iter_mut().enumerate() {
                *z = logit(&w[class_range(class, self.row)], features, self.dim);
            }
            let max = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let log_sum = max + p.iter().map(|z| (z - max).exp()).sum::<f64>().ln();
            loss += C * (log_sum - p[target]);
            for (class, z) in p.iter().enumerate() {
                let residual = C * ((z - log_sum).exp() - if class == target { 1.0 } else { 0.0 });
                let g = &mut gradient[class_range(class, self.row)];
                if let Some(dense) = features.dense {
                    for (g, &x) in g[..self.dim].iter_mut().zip(dense) {
                        *g += residual * f64::from(x);
                    }
                }
                for &(id, x) in &features.sparse {
                    g[self.dim + id as usize] += residual * x;
                }
                g[self.row - 1] += residual;
            }
        }
        (loss, gradient)
    }
}

fn class_range(class: usize, row: usize) -> std::ops::Range<usize> {
    class * row..(class + 1) * row
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Minimise the problem from `w` by L-BFGS with a backtracking (Armijo) line search: a fixed
/// sequence of floating-point operations, so the same material gives the same weights.
pub(super) fn lbfgs(problem: &Problem<'_, '_>, mut w: Vec<f64>) -> Vec<f64> {
    let (mut loss, mut gradient) = problem.evaluate(&w);
    let mut history: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> =
        std::collections::VecDeque::new();
    for _ in 0..MAX_ITERATIONS {
        if gradient.iter().all(|g| g.abs() < TOLERANCE) {
            break;
        }
        let direction = two_loop(&gradient, &history);
        let slope = dot(&direction, &gradient);
        if slope >= 0.0 {
            // Not a descent direction (numerical trouble): start the memory again.
            history.clear();
            continue;
        }
        let mut step = if history.is_empty() {
            1.0 / gradient.iter().map(|g| g * g).sum::<f64>().sqrt().max(1.0)
        } else {
            1.0
        };
        let mut accepted = None;
        for _ in 0..30 {
            let candidate: Vec<f64> = w
                .iter()
                .zip(&direction)
                .map(|(x, d)| x + step * d)
                .collect();
            let (candidate_loss, candidate_gradient) = problem.evaluate(&candidate);
            if candidate_loss <= loss + 1e-4 * step * slope {
                accepted = Some((candidate, candidate_loss, candidate_gradient));
                break;
            }
            step *= 0.5;
        }
        let Some((next, next_loss, next_gradient)) = accepted else {
            break;
        };
        let s: Vec<f64> = next.iter().zip(&w).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = next_gradient
            .iter()
            .zip(&gradient)
            .map(|(a, b)| a - b)
            .collect();
        let sy = dot(&s, &y);
        if sy > 1e-12 {
            if history.len() == MEMORY {
                history.pop_front();
            }
            history.push_back((s, y, 1.0 / sy));
        }
        let converged = (loss - next_loss).abs() <= 1e-10 * loss.abs().max(1.0);
        (w, loss, gradient) = (next, next_loss, next_gradient);
        if converged {
            break;
        }
    }
    w
}

/// L-BFGS's two-loop recursion: the descent direction `−H·g` from the remembered pairs.
fn two_loop(
    gradient: &[f64],
    history: &std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)>,
) -> Vec<f64> {
    let mut q = gradient.to_vec();
    let mut alphas = Vec::with_capacity(history.len());
    for (s, y, rho) in history.iter().rev() {
        let alpha = rho * dot(s, &q);
        for (q, y) in q.iter_mut().zip(y) {
            *q -= alpha * y;
        }
        alphas.push(alpha);
    }
    if let Some((s, y, _)) = history.back() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|x| *x *= gamma);
    }
    for ((s, y, rho), alpha) in history.iter().zip(alphas.into_iter().rev()) {
        let beta = rho * dot(y, &q);
        for (q, s) in q.iter_mut().zip(s) {
            *q += (alpha - beta) * s;
        }
    }
    q.iter_mut().for_each(|x| *x = -*x);
    q
}
