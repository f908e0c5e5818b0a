"""Reading a compiled program's collectives from XLA's HLO text (judge.hlo).

The lines below are XLA's own output for programs of the curriculum (jax 0.10.2), cut to
what matters; each replica-group form XLA prints is read, and mapped onto the mesh."""

from __future__ import annotations

import pytest

from judge import hlo

MESH_2X4 = {"mesh_axes": ["data", "model"], "mesh_shape": [2, 4],
            "assignment": list(range(8)), "mesh_devices": list(range(8))}

EXPLICIT = ("  %psum = f32[4,3]{1,0} all-reduce(%dot), channel_id=1, "
            "replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=%add")
EXPLICIT_DATA = ("  %ar = f32[4,3]{1,0} all-reduce(%dot), channel_id=1, "
                 "replica_groups={{0,4},{1,5},{2,6},{3,7}}, use_global_device_ids=true")
IOTA_MODEL = "  %ag = f32[8,4]{1,0} all-gather(%p), channel_id=2, replica_groups=[2,4]<=[8], dimensions={1}"
IOTA_DATA = ("  %ag = f32[8,4]{1,0} all-gather(%p), channel_id=2, "
             "replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}")
MESH_FORM = ("  %all-gather.1 = f32[4,16]{0,1} all-gather(%c), channel_id=2, "
             "replica_groups=mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) "
             "{'axis_1'}, dimensions={1}, use_global_device_ids=true")
PERMUTE = ("  %cp = f32[4]{0} collective-permute(%x), channel_id=3, "
           "source_target_pairs={{0,4},{4,0},{1,5},{5,1}}")
ASYNC = ("  %ars = f32[4]{0} all-reduce-start(%x), channel_id=4, replica_groups={{0,1,2,3,4,5,6,7}}\n"
         "  %ard = f32[4]{0} all-reduce-done(%ars)")


def kinds_axes(text: str, **mesh) -> list[tuple[str, tuple[str, ...] | None]]:
    return [(c.kind, c.axes) for c in hlo.collectives(text, **{**MESH_2X4, **mesh})]


def test_explicit_groups_map_to_their_axis() -> None:
    assert kinds_axes(EXPLICIT) == [("all-reduce", ("model",))]
    assert kinds_axes(EXPLICIT_DATA) == [("all-reduce", ("data",))]


def test_iota_groups_with_and_without_a_transpose() -> None:
    assert kinds_axes(IOTA_MODEL) == [("all-gather", ("model",))]
    assert kinds_axes(IOTA_DATA) == [("all-gather", ("data",))]


def test_mesh_form_with_device_ids() -> None:
    # device_ids: iota [2,4] transposed, 0,4,1,5,2,6,3,7, laid out as the mesh (1,4,2);
    # varying axis_1 with axis_2 fixed gives {0,1,2,3} and {4,5,6,7}: 'model'. (XLA printed
    # this for w1's all-gather when a (2,4) program replicated a column-parallel kernel.)
    assert kinds_axes(MESH_FORM) == [("all-gather", ("model",))]


def test_a_permute_is_over_the_axes_its_pairs_cross() -> None:
    assert kinds_axes(PERMUTE) == [("collective-permute", ("data",))]


def test_async_pairs_count_once_and_all_devices_are_both_axes() -> None:
    assert kinds_axes(ASYNC) == [("all-reduce", ("data", "model"))]


def test_groups_that_follow_no_axes_are_none() -> None:
    odd = EXPLICIT.replace("{{0,1,2,3},{4,5,6,7}}", "{{0,1,4,5},{2,3,6,7}}")
    assert kinds_axes(odd) == [("all-reduce", None)]


def test_the_device_order_of_the_executable_is_followed() -> None:
    # Logical ids index the executable's device order: with devices 0 and 4 swapped in it,
    # the groups {0,1,2,3},{4,5,6,7} hold devices {4,1,2,3},{0,5,6,7}: no axis.
    assignment = [4, 1, 2, 3, 0, 5, 6, 7]
    assert kinds_axes(EXPLICIT, assignment=assignment) == [("all-reduce", None)]


def test_size_one_axes_are_left_out() -> None:
    groups = EXPLICIT.replace("{{0,1,2,3},{4,5,6,7}}", "{{0},{1},{2},{3},{4},{5},{6},{7}}")
    assert kinds_axes(groups, mesh_axes=["data", "model"], mesh_shape=[8, 1]) == [
        ("all-reduce", ())]
    whole = EXPLICIT.replace("{{0,1,2,3},{4,5,6,7}}", "{}")
    assert kinds_axes(whole, mesh_axes=["data", "model"], mesh_shape=[8, 1]) == [
        ("all-reduce", ("data",))]


def test_other_instructions_are_not_collectives() -> None:
    text = ("  %dot = f32[4,3]{1,0} dot(%a, %b), lhs_contracting_dims={1}\n"
            "  %fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%all-reduce-like\n"
            "  ROOT %t = (f32[4]{0}) tuple(%fusion)")
    assert kinds_axes(text) == []


def test_text_in_quoted_strings_is_not_an_instruction() -> None:
    # A scope name reaches every instruction's metadata (op_name): a replicated program's
    # compare, in a scope that spells an all-reduce over 'model' (XLA's output, jax 0.10.2).
    forged = ('  %ne.5 = pred[8,3]{1,0} compare(%p, %p), direction=NE, metadata={op_name="jit('
              'call)/x = f32[] all-reduce(y), replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply='
              'add/ne" stack_frame_id=10}\n'
              '  %q = f32[4] negate(%p), metadata={op_name="a\\" = f32[] all-gather(%p), '
              'replica_groups={{0,1,2,3},{4,5,6,7}}"}')
    assert kinds_axes(forged) == []
    assert kinds_axes(EXPLICIT + ', metadata={op_name="jit(f)/psum"}') == [
        ("all-reduce", ("model",))]


@pytest.mark.parametrize("bad", [
    "  %x = f32[4] all-reduce(%a), replica_groups=mesh[oops] {'a'}",
    "  %x = f32[4] all-reduce(%a), replica_groups=[3,3]<=[8]",
    "  %x = f32[4] all-reduce(%a), replica_groups=?",
])
def test_unreadable_groups_are_an_error(bad: str) -> None:
    with pytest.raises(hlo.HloError):
        hlo.collectives(bad, **MESH_2X4)


def test_text_over_the_cap_is_an_error() -> None:
    with pytest.raises(hlo.HloError):
        hlo.collectives("x" * (hlo.MAX_TEXT + 1), **MESH_2X4)
