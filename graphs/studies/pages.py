"""The participant pages of `bongard study serve` (Starlette, server-rendered, no script).

Each participant opens `/p/TOKEN`, their own link: the page shows the next problem of the study as
its task's model is shown it, and takes one answer (or "I don't know"). Every answer is kept when it
is sent, so closing the browser loses nothing and the link resumes where the participant stopped.
A token opens only its own participant's pages; image addresses and form fields name images by
their place on the page, never by their side.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import python_multipart  # noqa: F401  (Starlette reads forms with it, and says it lacks it only at the first answer)
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from datasets_io.errors import BongardError
from datasets_io.render import panel_image, png_bytes, render_sheet
from graphs.studies.answers import IncompleteAnswer, read_form
from graphs.studies.participants import Step, Study
from graphs.studies.questions import Question
from graphs.web import LOOPBACK, SecurityHeaders, bind, server
from results.store import ResultsStore
from results.studies import Participant

HERE = Path(__file__).parent
ANY_ADDRESS = "0.0.0.0"
"""Every address of the machine: served beyond it only with --lan."""
IMAGES_KEPT = 64
PANEL_SIDE = 384
NO_STORE = {"cache-control": "no-store"}
"""Pages and images are the participant's own: never kept by a browser or a proxy."""


class StudyPages:
    """What the pages share: the open study and its rendered images."""

    def __init__(self, store: ResultsStore, study: str) -> None:
        self.study = Study(store, study)
        self._images: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._drawing = threading.Lock()

    def participant(self, request: Request) -> Participant:
        found = self.study.records.participant_of_token(self.study.name, request.path_params["token"])
        if found is None:
            raise HTTPException(404, "This link opens no participant's pages: ask the researcher for yours.")
        return found

    def image(self, question: Question, place: int) -> bytes:
        """PNG of the image at `place` on the problem's page (the sheet first, where it is shown)."""
        key = (question.problem.key, place)
        with self._drawing:
            if key in self._images:
                self._images.move_to_end(key)
                return self._images[key]
            shown = question.images
            if not 0 <= place < len(shown):
                raise HTTPException(404, "no such image")
            if len(shown[place]) > 1:
                image = render_sheet(question.problem, "plain")
            else:
                image = panel_image(question.panel(shown[place][0]), "plain")
                image.thumbnail((PANEL_SIDE, PANEL_SIDE))
            self._images[key] = png = png_bytes(image)
            while len(self._images) > IMAGES_KEPT:
                self._images.popitem(last=False)
            return png


def pages_of(request: Request) -> StudyPages:
    pages: StudyPages = request.app.state.pages
    return pages


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(request, name, context, status_code=status, headers=NO_STORE)


def participant_page(request: Request) -> Response:
    pages = pages_of(request)
    participant = pages.participant(request)
    study = pages.study
    study.catch_up(participant)
    step = study.step(participant)
    if step.problem is None:
        return render(request, "done.html", _frame(study, step))
    if step.at_break:
        return render(request, "break.html", _frame(study, step))
    return _problem_page(request, study, participant, step)


def _problem_page(
    request: Request, study: Study, participant: Participant, step: Step, error: str | None = None
) -> Response:
    assert step.problem is not None
    shown = study.show(participant, step.problem)
    question = study.question(step.problem)
    context = {
        **_frame(study, step),
        "question": question,
        "text": study.questions.instructions() if step.instructions else None,
        "images": len(question.images),
        "error": error,
        "dont_know": study.design.dont_know and not step.instructions,
        "time_limit": study.design.time_limit_s,
        "shown_at": shown.shown_at,
    }
    return render(request, "problem.html", context, 400 if error else 200)


def _frame(study: Study, step: Step) -> dict[str, Any]:
    sessions = study.design.sessions
    return {
        "step": step,
        "sessions": len(sessions),
        "session_size": len(sessions[min(step.session, len(sessions) - 1)]),
        "total": len(study.design.problems),
        "task": study.design.task,
    }


async def answer_page(request: Request) -> Response:
    pages = pages_of(request)
    participant = pages.participant(request)
    form = {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
    study = pages.study
    step = study.step(participant)
    problem = form.get("problem", "")
    if step.problem is not None and problem == step.problem and not step.at_break:
        if step.instructions:
            study.answer(participant, problem, {})
        else:
            try:
                given = read_form(study.question(problem), form)
            except IncompleteAnswer as incomplete:
                return _problem_page(request, study, participant, step, str(incomplete))
            study.answer(participant, problem, given)
    # anything else (a form sent twice, an old page) keeps nothing and shows where the participant is
    return RedirectResponse(f"/p/{request.path_params['token']}", status_code=303)


async def start_session(request: Request) -> Response:
    pages = pages_of(request)
    participant = pages.participant(request)
    step = pages.study.step(participant)
    if step.problem is not None and step.at_break:
        pages.study.show(participant, step.problem)
    return RedirectResponse(f"/p/{request.path_params['token']}", status_code=303)


def image_png(request: Request) -> Response:
    pages = pages_of(request)
    participant = pages.participant(request)
    problem = request.path_params["problem"]
    if problem not in pages.study.records.answers(pages.study.name, participant.pseudonym):
        raise HTTPException(404, "no such image")  # only the problems this participant was shown
    png = pages.image(pages.study.question(problem), int(request.path_params["place"]))
    return Response(png, media_type="image/png", headers=NO_STORE)


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return render(request, "error.html", {"message": error.detail}, error.status_code)


async def toolkit_error(request: Request, error: Exception) -> Response:
    return render(request, "error.html", {"message": str(error)}, 500)


def create_app(store: ResultsStore, study: str, *, lan: bool = False) -> Starlette:
    """The participant pages of `study`; `lan`: requests naming any host are answered (the pages
    are served beyond this machine), else only those naming the loopback address."""
    pages = StudyPages(store, study)
    pages.study.check_questions()

    routes = [
        Route("/p/{token}", participant_page),
        Route("/p/{token}/answer", answer_page, methods=["POST"]),
        Route("/p/{token}/start", start_session, methods=["POST"]),
        Route("/p/{token}/image/{place:int}/{problem:path}", image_png),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    hosts = ["*"] if lan else [LOOPBACK, "localhost"]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts), Middleware(SecurityHeaders)],
        exception_handlers={HTTPException: http_error, BongardError: toolkit_error},
    )
    app.state.pages = pages
    app.state.templates = Jinja2Templates(
        env=jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
    )
    return app


def lan_address() -> str:
    """This machine's address on its network, as a participant's browser there would reach it
    (nothing is sent: a UDP socket is only pointed at a private address)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        return str(probe.getsockname()[0])
    except OSError:
        return LOOPBACK
    finally:
        probe.close()


def serve(store: ResultsStore, study: str, port: int, lan: bool, announce: Callable[[str], None]) -> None:
    """Serve the study's pages until Ctrl-C, on 127.0.0.1 (`lan`: on every address of the machine);
    `announce` gets the address links start with."""
    app = create_app(store, study, lan=lan)
    sock = bind(port, ANY_ADDRESS if lan else LOOPBACK)
    announce(f"http://{lan_address() if lan else LOOPBACK}:{sock.getsockname()[1]}")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down gracefully, then re-raises Ctrl-C
        server(app, sock).run(sockets=[sock])
