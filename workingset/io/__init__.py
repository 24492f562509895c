"""The process edges: files and OS errors, the input limits, standard streams, the progress bar."""
