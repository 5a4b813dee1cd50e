"""Provides `SessionError`, the one error a debugging session raises at the person at the keyboard.

It lives apart from the session so the command parser (`debugger.commands`) and the session
(`debugger.session`) can both raise it without importing each other.
"""

from __future__ import annotations


class SessionError(Exception):
    """Bad input or an impossible request; the message is for the person at the keyboard."""
