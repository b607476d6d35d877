//! `--strategy`: the candidate strategies `gorag eval` compares, as the command line names
//! them.

use clap::ValueEnum;

use crate::engine::Strategy;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StrategyArg {
    Steiner,
    All,
    Naive,
    Ranked,
    Proximity,
    Hybrid,
    /// The embedding baseline: the label of the nearest labelled example by the encoder.
    Nearest,
    /// A peer: labels by the cosine with the mean of their examples' vectors and their name's.
    Prototype,
    /// A peer: a logistic regression over [vector, words] on the labels' examples and names.
    Probe,
}

impl From<StrategyArg> for Strategy {
    fn from(value: StrategyArg) -> Self {
        match value {
            StrategyArg::Steiner => Strategy::Steiner,
            StrategyArg::All => Strategy::All,
            StrategyArg::Naive => Strategy::Naive,
            StrategyArg::Ranked => Strategy::Ranked,
            StrategyArg::Proximity => Strategy::Proximity,
            StrategyArg::Hybrid => Strategy::Hybrid,
            StrategyArg::Nearest => Strategy::Nearest,
            StrategyArg::Prototype => Strategy::Prototype,
            StrategyArg::Probe => Strategy::Probe,
        }
    }
}
