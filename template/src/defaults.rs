//! Defaults chosen when this project was generated (inbox-kit options
//! `default_workers`{% if database == "sqlite" %} and `durability`{% endif %}). Command-line flags override them.

/// Worker threads `run` uses unless `--workers` says otherwise.
pub const WORKERS: u16 = {{default_workers}};
{%- if database == "sqlite" %}

/// How hard commits are pushed to disk unless `--durability` says otherwise.
pub const DURABILITY: Durability = Durability::{{durability | capitalize}};

/// How hard SQLite pushes each commit to disk. The trade-off is explained
/// in the README ("Durability").
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Durability {
    /// `synchronous=NORMAL`: fast; survives a crash of this process, but a
    /// power loss can undo the last commits.
    Normal,
    /// `synchronous=FULL`: every commit is on disk before it counts.
    Full,
}
{%- endif %}
