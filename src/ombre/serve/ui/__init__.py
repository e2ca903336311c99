"""The web dashboard (issue #18): server-side pages at /ui over the library, plots as plain SVG."""
