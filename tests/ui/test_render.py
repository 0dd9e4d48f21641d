"""Untrusted text becomes safe HTML: markdown is sanitised, code highlighted, LaTeX and think blocks kept."""

from __future__ import annotations

from rollout_server.ui.render import RenderOptions, json_html, text_html


def test_markdown_is_rendered_then_sanitised() -> None:
    html = str(text_html('**bold** <script>alert(1)</script> <img src=x onerror="alert(2)"> '
                         '[link](javascript:alert(3)) <a href="javascript:alert(4)">a</a> <iframe src="/x"></iframe>'))
    assert "<strong>bold</strong>" in html
    for bad in ("<script", "onerror=", 'href="javascript:', "<iframe"):
        assert bad not in html.lower(), bad
    assert "[link](javascript:alert(3))" in html  # markdown-it leaves a javascript: link as plain text


def test_raw_and_plain_modes_escape_everything() -> None:
    for options in (RenderOptions(md=False), RenderOptions(raw=True)):
        html = str(text_html("<b>hi</b> <script>x</script>", options))
        assert "&lt;b&gt;" in html and "<script" not in html


def test_code_is_highlighted_and_json_too() -> None:
    html = str(text_html("```python\ndef f():\n    return 1\n```"))
    assert 'class="k"' in html  # a Pygments keyword span survived the sanitiser
    assert 'class="nt"' in str(json_html({"a": "<script>"}))
    assert "<script>" not in str(json_html({"a": "<script>"}))


def test_latex_is_kept_for_katex_and_not_mangled_by_markdown() -> None:
    html = str(text_html("Let $a_1 + a_2$ and $$x_{i}^2$$ hold; costs $5 and $6."))
    assert '<span class="math-inline">a_1 + a_2</span>' in html
    assert '<span class="math-display">x_{i}^2</span>' in html
    assert str(text_html("x $a$", RenderOptions(latex=False))).count("math-inline") == 0


def test_think_blocks_fold_or_show_raw() -> None:
    folded = str(text_html("<think>secret plan</think>Answer"))
    assert '<details class="think">' in folded and "secret plan" in folded
    raw = str(text_html("<think>secret plan</think>Answer", RenderOptions(think=False)))
    assert "&lt;think&gt;secret plan&lt;/think&gt;" in raw


def test_long_text_is_truncated() -> None:
    html = str(text_html("x" * 50_000))
    assert "more characters" in html and len(html) < 25_000
