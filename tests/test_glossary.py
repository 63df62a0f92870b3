"""Every glossary term is complete, Chinese included, and points at a chapter the course has."""

import re

import pytest

from course import chapters, glossary

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_term_is_complete():
    assert len(glossary.TERMS) >= 40
    for term in glossary.TERMS:
        assert term.en.strip() and term.zh.strip() and term.definition.strip(), term
        assert CJK.search(term.zh), f"{term.en}: the Chinese term has no Chinese in it: {term.zh!r}"
        assert "\n" not in term.definition and len(term.definition) <= 160, f"{term.en}: keep it to one line"


def test_every_term_names_an_existing_chapter():
    numbers = {ch.number for ch in chapters.CHAPTERS}
    for term in glossary.TERMS:
        assert term.chapter in numbers, f"{term.en}: chapter {term.chapter} is not in course.chapters"


def test_no_term_twice():
    en = [t.en.lower() for t in glossary.TERMS]
    zh = [t.zh for t in glossary.TERMS]
    assert len(set(en)) == len(en)
    assert len(set(zh)) == len(zh)


@pytest.mark.parametrize(
    "en,zh",
    # the pairs the chapters and the seeds use; they must not drift
    [("warp", "线程束"), ("block (thread block)", "线程块"), ("grid", "网格"), ("host", "主机"),
     ("device", "设备"), ("coalesced access", "合并访存"), ("bank conflict", "存储体冲突"),
     ("tail effect", "尾部效应"), ("kernel", "核函数"), ("occupancy", "占用率")],
)
def test_core_pairs(en, zh):
    assert glossary.lookup(en).zh == zh
    assert glossary.lookup(zh).en == en


def test_chapter_01_introduces_the_programming_model_terms():
    introduced = {t.en for t in glossary.terms(1)}
    for en in ("host", "device", "kernel", "thread", "grid", "warp", "tail effect", "bounds guard"):
        assert any(en == name or name.startswith(en + " ") for name in introduced), en


def test_lookup_explains_misses_and_ambiguity():
    with pytest.raises(KeyError, match="not in the glossary"):
        glossary.lookup("quantum entanglement")
    with pytest.raises(KeyError, match="several terms"):
        glossary.lookup("memory")


def test_table_shows_every_term_of_a_chapter():
    tab = glossary.table(1)
    html = tab._repr_html_()
    assert len(tab) == len(glossary.terms(1)) > 0
    for term in glossary.terms(1):
        assert term.zh in html and term.zh in repr(tab)
    assert html.count("<tr>") == len(tab) + 1  # header + one row per term
    assert len(glossary.table()) == len(glossary.TERMS)
