"""The web dashboard: server-side pages at /ui over the library, plots as plain SVG."""
