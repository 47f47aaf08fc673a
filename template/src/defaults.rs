//! Defaults chosen when this project was generated (inbox-kit options
//! `default_workers`{% if database == "sqlite" %} and `durability`{% endif %}). Command-line flags override them.
{%- if database == "sqlite" %}

pub use inbox_kit_runtime::sqlite::Durability;
{%- endif %}

/// Worker threads `run` uses unless `--workers` says otherwise.
pub const WORKERS: u16 = {{default_workers}};
{%- if database == "sqlite" %}

/// How hard commits are pushed to disk unless `--durability` says otherwise.
pub const DURABILITY: Durability = Durability::{{durability | capitalize}};

{%- endif %}
