"""course.chapters is the one list of chapters, and it agrees with the notebooks in notebooks/."""

import re

from course import chapters

ROOT = chapters.NOTEBOOKS.parent


def test_chapters_are_numbered_00_to_11_in_order():
    assert [ch.number for ch in chapters.CHAPTERS] == list(range(12))
    for ch in chapters.CHAPTERS:
        assert re.fullmatch(rf"{ch.number:02d}_[a-z0-9_]+\.ipynb", ch.file), ch.file
        assert ch.title and ch.title_zh and ch.seeds


def test_the_brief_topics_are_in_their_places():
    topics = {0: "start", 1: "programming model", 2: "warp", 3: "coalesc", 4: "bank", 5: "transpose",
              6: "occupancy", 7: "reduction", 8: "stream", 9: "matrix multiply", 10: "measure", 11: "gpus"}
    for number, word in topics.items():
        assert word in chapters.chapter(number).title.lower(), (number, word)


def test_every_notebook_is_a_listed_chapter():
    listed = {ch.file for ch in chapters.CHAPTERS}
    on_disk = sorted(p.name for p in chapters.NOTEBOOKS.glob("*.ipynb"))
    strays = [name for name in on_disk if name not in listed]
    assert not strays, (
        f"notebooks/ holds {strays}, which course/chapters.py does not list; "
        "rename the notebook to the chapter's file name, or change the entry in course/chapters.py"
    )


def test_exists_matches_the_disk():
    on_disk = {p.name for p in chapters.NOTEBOOKS.glob("*.ipynb")}
    for ch in chapters.CHAPTERS:
        assert ch.exists == (ch.file in on_disk)
    assert chapters.chapter(0).exists and chapters.chapter(1).exists


def test_the_readme_and_makefile_open_chapter_00():
    first = chapters.chapter(0).file
    assert f"notebooks/{first}" in (ROOT / "Makefile").read_text()


def test_seed_sections_name_real_seeds():
    for ch in chapters.CHAPTERS[1:]:
        for seed in re.findall(r"\b(\d{3}) §", ch.seeds):
            assert seed in chapters.SEEDS, (ch.file, seed)
    for key in chapters.NOT_TAUGHT:
        assert key.split()[0] in chapters.SEEDS


def test_map_marks_written_chapters():
    text = repr(chapters.table())
    html = chapters.table()._repr_html_()
    for ch in chapters.CHAPTERS:
        line = next(l for l in text.splitlines() if l.startswith(f"{ch.number:02d} "))
        assert line.rstrip().endswith("yes" if ch.exists else "not yet")
        assert ch.file in html


def test_unknown_chapter_is_explained():
    try:
        chapters.chapter(42)
    except KeyError as err:
        assert "chapters 0 to 11" in str(err)
    else:
        raise AssertionError("chapter(42) should raise")


# "the `matrix_add` cell of §3", "the `stencil_global` and `stencil_shared` cells of §1": a task that sends
# the learner to a section must name the section whose cell defines the kernel.
_CELL_OF_SECTION = re.compile(r"((?:`\w+`(?:,| and| or)?\s*)+)\s*cells? of §(\d+)")


def _sections_defining(nb_cells) -> dict:
    """{name: section numbers whose code cells define it (def name / name = at line start)}."""
    found: dict = {}
    section = None
    for cell in nb_cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for m in re.finditer(r"^## (\d+)\s*[.·]|^## (?!\d)", text, re.M):
                section = int(m.group(1)) if m.group(1) else None
        elif section is not None:
            for name in re.findall(r"^(?:def (\w+)\(|(\w+) = )", text, re.M):
                found.setdefault(name[0] or name[1], set()).add(section)
    return found


def test_a_task_that_names_a_cell_names_its_section():
    import json

    checked = 0
    for ch in chapters.CHAPTERS:
        cells = json.loads((chapters.NOTEBOOKS / ch.file).read_text(encoding="utf-8"))["cells"]
        defined = _sections_defining(cells)
        for cell in cells:
            if cell["cell_type"] != "markdown":
                continue
            for names, number in _CELL_OF_SECTION.findall("".join(cell["source"])):
                for name in re.findall(r"`(\w+)`", names):
                    assert name in defined, f"{ch.file}: a task names the `{name}` cell, which no numbered section defines"
                    assert int(number) in defined[name], (
                        f"{ch.file}: a task sends the learner to the `{name}` cell of §{number}; "
                        f"it is in §{', §'.join(map(str, sorted(defined[name])))}")
                    checked += 1
    assert checked >= 6  # the pattern still finds the tasks (chapters 01, 02, 04, 05, 09, 10)


def test_the_section_pattern_catches_a_wrong_number():
    cells = [{"cell_type": "markdown", "source": ["## 1 · one\n"]},
             {"cell_type": "code", "source": ["def kern(a):\n", "    pass\n"]},
             {"cell_type": "markdown", "source": ["## 2 · two\n", "In the `kern` cell of §2, change it.\n"]}]
    defined = _sections_defining(cells)
    names, number = _CELL_OF_SECTION.findall("".join(cells[2]["source"]))[0]
    assert defined["kern"] == {1} and number == "2"


def test_predict_cells_ship_empty():
    # the learner writes the prediction: a cell that ships with one shows the answer before the question
    import json

    found = 0
    for ch in chapters.CHAPTERS:
        cells = json.loads((chapters.NOTEBOOKS / ch.file).read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            for names, value in re.findall(r"^(my_\w+(?:\s*,\s*my_\w+)*)\s*=\s*([^#\n]*)", "".join(cell["source"]), re.M):
                found += 1
                empty = ", ".join(["None"] * len(names.split(",")))
                assert value.strip() == empty, f"{ch.file}: `{names} = {value.strip()}` ships filled in; write {empty}"
    assert found >= 20


def test_every_notebook_a_chapter_names_exists():
    """A chapter that sends the learner to ``exercises/…ipynb`` or ``solutions/…ipynb`` names a file that is there
    (the exercise notebooks are ``NN_topic_exercises.ipynb``; six chapters once named ``NN_topic.ipynb``)."""
    missing = []
    for nb in sorted(chapters.NOTEBOOKS.glob("*.ipynb")):
        for ref in sorted(set(re.findall(r"(?:exercises|solutions)/\d\d_[a-z_]+\.ipynb", nb.read_text(encoding="utf-8")))):
            if not (ROOT / ref).exists():
                missing.append(f"{nb.name}: {ref}")
    assert not missing, missing


def test_every_section_that_shows_a_kernel_has_a_graded_check():
    """Issue 25: a ``## N`` section with a kernel cell (a ``@cuda.jit`` or a generated kernel cell) also holds an
    ``exercises.check(...)`` cell, so the learner is answered there, not only in the exercise notebooks."""
    import json

    missing = []
    for nb in sorted(chapters.NOTEBOOKS.glob("*.ipynb")):
        sections, current = [], None
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                for line in text.splitlines():
                    if line.startswith("## "):
                        current = {"title": line[3:], "kernel": False, "check": False}
                        sections.append(current)
            elif current is not None:
                current["kernel"] |= "@cuda.jit" in text or bool(cell["metadata"].get("course", {}).get("kernel"))
                current["check"] |= "exercises.check(" in text
        missing += [f"{nb.name}: {s['title']}" for s in sections if s["kernel"] and not s["check"]]
    assert not missing, missing
