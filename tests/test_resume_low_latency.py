"""A run killed at 5 ms latency resumes without repaying a call answered well before the kill.

At 100 ms latency every finished call was kept; at 5 ms the checkpointer's thread works beside a
stream of replies, so a finished call might still sit in its queue at a kill. Calls are sampled
(temperature 0.7), so none comes from the response cache: a call the resume makes again reaches
the server again. A describe call is known by its one image; images that several Bongard-RWR
problems share are left out, since another problem's item sends them too (so are the answer calls,
whose text is the same for every item against this stand-in)."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from pathlib import Path

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.killed_runs import kill, respond, run_args, start, wait_for
from tests.sent_requests import sent_images
from tests.standins.server import Recorded, StandIn

LATENCY_S = 0.005
SETTLED_S = 0.3
"""A call answered this long before the kill (60 times the latency) is finished, whatever was in flight."""


def image_of(request: Recorded) -> str | None:
    """The digest of a describe call's one image (None for a call with none or several)."""
    images = sent_images(request.body)
    return hashlib.sha256(images[0]).hexdigest() if len(images) == 1 else None


def test_calls_answered_well_before_a_kill_are_not_made_again(
    standin: StandIn, tmp_path: Path, shared_data: Path
) -> None:
    rwr = shared_data / "bongard-rwr"
    files = [f for f in rwr.rglob("*") if f.is_file() and f.suffix.lower() in (".png", ".jpg", ".jpeg")]
    uses = Counter(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)
    numbers = sorted((p.name for p in rwr.iterdir() if p.name.isdigit()), key=int)
    server = standin(responder=respond)
    server.latency_s = LATENCY_S
    running = start(*run_args(server, tmp_path, shared_data, "descriptive", ",".join(numbers)))
    wait_for(lambda: len(server.requests) >= 400, "400 calls")
    killed_at = time.time()
    kill(running)
    before = list(server.model_requests())
    settled = {
        image for r in before if r.at < killed_at - SETTLED_S and (image := image_of(r)) and uses[image] == 1
    }
    assert len(settled) >= 100, "the run made too few calls before the kill to tell anything"
    store = ResultsStore(tmp_path / STORE_FILE)
    resumed = run_bongard("run", "--resume", store.resolve_run("latest"), "--home", tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    again = [r for r in list(server.model_requests())[len(before) :] if image_of(r) in settled]
    assert again == [], f"{len(again)} of {len(settled)} settled calls made again"
    assert store.summary(store.resolve_run("latest")).done == len(numbers)
