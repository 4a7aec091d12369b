"""Staged probes that run *inside* a target image or environment (stdlib + the framework only).

They never import `harness`: the harness mounts the file into the target and reads its stdout.
"""
