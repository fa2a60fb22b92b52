"""Results: metrics, tables, plots, traces and live views derived from events.jsonl."""
