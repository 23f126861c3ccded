"""Every prompt is our own words: no prompt file shares a run of seven words with a paper's text.

Issue 33 found the rubric judge sharing word 7-grams with Bongard in Wonderland (Table 3's first
example, a clause of Listing 7). The check reads words as lower-case letters and digits, so case,
punctuation and line breaks cannot hide a copied run; each file's `follows:` comment (the citation
naming the paper prompt it follows) is left out, as a title there is a citation, not a prompt.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.data_paths import REPO_ROOT, shared_data_dir

RUN = 7
WORD = re.compile(r"[a-z0-9]+")
CITATION = re.compile(r"<!--.*?-->", re.DOTALL)
PROMPT_FILES = sorted(
    path for folder in ("graphs/prompts", "judges/prompts") for path in (REPO_ROOT / folder).rglob("*.md")
)


def runs_of_words(text: str) -> set[tuple[str, ...]]:
    words = WORD.findall(text.lower())
    return {tuple(words[start : start + RUN]) for start in range(len(words) - RUN + 1)}


@pytest.fixture(scope="module")
def paper_runs() -> dict[str, set[tuple[str, ...]]]:
    papers = shared_data_dir().parent / "papers"
    texts = sorted(papers.glob("*.txt"))
    if not texts:
        pytest.skip(f"the papers' texts are not beside this clone ({papers}); they are not ours to ship")
    return {path.name: runs_of_words(path.read_text(encoding="utf-8", errors="replace")) for path in texts}


def test_the_check_sees_every_prompt_file() -> None:
    assert len(PROMPT_FILES) >= 40 and all(path.stat().st_size for path in PROMPT_FILES)


@pytest.mark.parametrize("prompt", PROMPT_FILES, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_no_prompt_file_shares_seven_words_in_a_row_with_a_paper(
    prompt: Path, paper_runs: dict[str, set[tuple[str, ...]]]
) -> None:
    own = runs_of_words(CITATION.sub(" ", prompt.read_text(encoding="utf-8")))
    shared = {paper: sorted(" ".join(run) for run in own & runs) for paper, runs in paper_runs.items()}
    assert not any(shared.values()), {paper: runs[:3] for paper, runs in shared.items() if runs}


def test_the_check_finds_a_copied_run_however_it_is_written() -> None:
    copied = "Respond with\n**ANSWER**: 1 if the Model's answer is correct."
    assert runs_of_words(copied) & runs_of_words("respond with answer 1 if the model s answer is correct")
