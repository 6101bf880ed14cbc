"""Readers and writers, and (in later modules) the data-set construction tools."""
