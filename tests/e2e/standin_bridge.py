"""A stand-in for cc-connect (which cannot be installed here, DESIGN §3): it reads cc-connect's session file
and resumes the bound Claude Code session the way cc-connect does (`claude … --resume <agent_session_id>`),
sending one message, then writes what happened to a JSON file.

    python standin_bridge.py SESSION_FILE OUT_FILE MESSAGE   (env: OMBRE_CLAUDE_CLI, STANDIN_CWD)
"""
import json
import os
import subprocess
import sys

session_file, out_file, message = sys.argv[1:4]
with open(session_file, encoding="utf-8") as f:
    data = json.load(f)
active = next(iter(data["active_session"].values()))
sid = data["sessions"][active]["agent_session_id"]
proc = subprocess.run(["node", os.environ["OMBRE_CLAUDE_CLI"], "-p", message, "--output-format", "json",
                       "--dangerously-skip-permissions", "--resume", sid],
                      cwd=os.environ["STANDIN_CWD"], capture_output=True, text=True, timeout=90)
with open(out_file, "w", encoding="utf-8") as f:
    json.dump({"sid": sid, "returncode": proc.returncode, "stdout": proc.stdout[-2000:],
               "stderr": proc.stderr[-2000:]}, f)
