"""Reports: tables (terminal, markdown, csv, latex, json), plots and self-contained HTML."""
