"""Opening a page in the web browser so that it opens also when the script ends right after.

``webbrowser.open`` run in a daemon thread dies with the script (0 of 5 opens when
``browse()`` was a script's last line), and for a browser named in ``BROWSER`` it waits
for the browser to exit. Here a graphical browser is started as a process of its own (a
new session, no shared stdin/stdout), and ``open_in_browser`` returns once it has been
started: the script may end at once, the browser stays.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from typing import List, Optional

#: Browsers that draw in the terminal: run in the foreground, with the terminal.
CONSOLE_BROWSERS = ("www-browser", "lynx", "w3m", "links", "elinks", "browsh")


def open_in_browser(url: str) -> bool:
    """Opens url in the user's browser; True when a browser was started.

    ``BROWSER`` (a list of commands separated by ``os.pathsep``, ``%s`` standing for the
    URL, else it is appended) is tried first, as Python's ``webbrowser`` does; then
    ``webbrowser``'s own choice (xdg-open, the desktop's browser, ...).
    """
    for entry in os.environ.get("BROWSER", "").split(os.pathsep):
        command = _command(entry, url)
        if command is not None:
            return _start(command)
    try:
        import webbrowser

        return bool(webbrowser.open(url))  # graphical browsers: started in the background
    except Exception:
        return False


def _command(entry: str, url: str) -> Optional[List[str]]:
    """The argv for one BROWSER entry, or None when it names no program found here."""
    try:
        words = shlex.split(entry.strip())
    except ValueError:
        return None
    if not words:
        return None
    program = shutil.which(words[0])
    if program is None:
        return None
    if any("%s" in word for word in words):
        args = [word.replace("%s", url) for word in words[1:]]
    else:
        args = words[1:] + [url]
    return [program, *args]


def _start(command: List[str]) -> bool:
    """Starts the browser; a console browser runs in the foreground, any other detached."""
    try:
        if os.path.basename(command[0]) in CONSOLE_BROWSERS:
            return subprocess.call(command) == 0
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not killed with the script's process group
            close_fds=True,
        )
        return True
    except OSError:
        return False
