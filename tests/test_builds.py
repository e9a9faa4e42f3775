"""Which of a wheel's builds the import loads (torch_green_contexts/_builds.py), and the wheel
that scripts/build_wheel.py writes around them (scripts/wheelbuild/pack.py), without compiling."""

import json
import pathlib
import sys
import zipfile

import pytest

from torch_green_contexts import _builds

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _wheel(python="cp312", builds=(("2.6.0+cu124", "12.4", False), ("2.11.0+cu128", "12.8", True),
                                   ("2.15.0+cu132", "13.2", True))):
    return _builds.WheelBuilds(python=python, platform="manylinux_2_34_x86_64", builds=tuple(
        _builds.Build(torch=t, cuda=c, cxx11_abi=abi, path=pathlib.Path(f"torch-{t[:4]}/_C.so")) for t, c, abi in builds))


@pytest.mark.parametrize("running, chosen", [("2.11.0+cu130", "2.11.0+cu128"), ("2.11.1", "2.11.0+cu128"),
                                             ("2.6.0+cu124", "2.6.0+cu124"), ("2.15.0", "2.15.0+cu132")])
def test_the_running_release_picks_its_build_whatever_the_patch_and_cuda(running, chosen):
    assert _builds.choose(_wheel(), running, cxx11_abi=running.startswith("2.1"), python="cp312").torch == chosen


def test_a_release_without_a_build_names_the_releases_held_and_the_source_build():
    with pytest.raises(ImportError) as caught:
        _builds.choose(_wheel(), "2.16.0+cu132", cxx11_abi=True, python="cp312")
    message = str(caught.value)
    assert "holds builds for torch 2.6, 2.11, 2.15 (CPython 3.12, manylinux_2_34_x86_64)" in message, message
    assert "torch 2.16.0+cu132 is installed, which none of them serves" in message, message
    assert "pip install --no-build-isolation --no-binary torch_green_contexts torch_green_contexts" in message


def test_another_cxx_abi_is_refused_with_both_named():
    with pytest.raises(ImportError) as caught:
        _builds.choose(_wheel(), "2.6.0a0+gitabc", cxx11_abi=True, python="cp312")
    message = str(caught.value)
    assert "compiled against torch 2.6.0+cu124, which uses the pre-C++11 std::string ABI (_GLIBCXX_USE_CXX11_ABI=0)" \
        in message, message
    assert "installed torch 2.6.0a0+gitabc uses the C++11 std::string ABI (_GLIBCXX_USE_CXX11_ABI=1)" in message
    assert "--no-build-isolation" in message


def test_a_wheel_of_another_python_says_which():
    with pytest.raises(ImportError, match=r"built for CPython 3\.12, but CPython 3\.9 runs it"):
        _builds.choose(_wheel(), "2.6.0", cxx11_abi=False, python="cp39")
    assert _builds.running_python() == "cp%d%d" % sys.version_info[:2]


def test_a_build_the_loader_refuses_is_an_import_error_naming_the_platform():
    wheel = _wheel()
    error = _builds.load_failed(wheel.builds[0], wheel, OSError("version `GLIBC_2.34' not found"))
    assert isinstance(error, ImportError)
    assert "build for torch 2.6 (compiled against torch 2.6.0+cu124, for manylinux_2_34_x86_64)" in str(error)
    assert "GLIBC_2.34" in str(error)


def test_a_source_build_needs_the_very_torch_it_was_built_against():
    _builds.check_source_build("2.15.0+cu132", "2.15.0+cu132")
    _builds.check_source_build(None, "2.15.0+cu132")
    with pytest.raises(ImportError, match=r"built against torch 2\.15\.0\+cu132, but torch 2\.15\.0\+cu130 is installed"):
        _builds.check_source_build("2.15.0+cu132", "2.15.0+cu130")


def test_the_manifest_is_read_with_paths_beside_it(tmp_path):
    assert _builds.read_manifest(tmp_path / "builds.json") is None
    (tmp_path / "builds.json").write_text(json.dumps({"python": "cp311", "platform": "linux_x86_64", "builds": [
        {"torch": "2.7.1+cu126", "cuda": "12.6", "cxx11_abi": True, "module": "torch-2.7/_C.so"}]}))
    wheel = _builds.read_manifest(tmp_path / "builds.json")
    assert wheel is not None and wheel.releases() == "2.7" and wheel.builds[0].path == tmp_path / "torch-2.7" / "_C.so"


@pytest.fixture
def pack():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from wheelbuild import pack
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return pack


@pytest.mark.parametrize("needs, tag", [({"GLIBC": (2, 34), "GLIBCXX": (3, 4, 29)}, "manylinux_2_34_x86_64"),
                                        ({"GLIBC": (2, 2, 5)}, "manylinux_2_17_x86_64"),
                                        ({"GLIBC": (2, 28), "GLIBCXX": (3, 4, 30)}, "linux_x86_64")])
def test_the_platform_tag_follows_the_newest_c_library_the_builds_need(pack, needs, tag):
    assert pack.platform_tag(needs) == tag


def test_the_wheel_holds_the_python_files_once_and_every_build(pack, tmp_path):
    import base64
    import hashlib

    pure = tmp_path / "torch_green_contexts-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(pure, "w") as archive:
        archive.writestr("torch_green_contexts/__init__.py", "x = 1\n")
        archive.writestr("torch_green_contexts-0.1.0.dist-info/METADATA", "Name: torch_green_contexts\n")
        archive.writestr("torch_green_contexts-0.1.0.dist-info/WHEEL",
                         "Wheel-Version: 1.0\nGenerator: setuptools (84)\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr("torch_green_contexts-0.1.0.dist-info/RECORD", "stale\n")
    modules = []
    for release in ("2.6", "2.15"):
        so = tmp_path / f"{release}.so"
        so.write_bytes(release.encode() * 100)
        modules.append(pack.Module(f"{release}.0", "12.4", release != "2.6", so, f"torch-{release}/_C.cpython-312-x.so"))
    wheel = pack.write_wheel(pure, modules, "cp312", "manylinux_2_34_x86_64", tmp_path / "out")
    assert wheel.name == "torch_green_contexts-0.1.0-cp312-cp312-manylinux_2_34_x86_64.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        files = {name: archive.read(name) for name in names}
    assert names.count("torch_green_contexts/__init__.py") == 1
    wheel_meta = files["torch_green_contexts-0.1.0.dist-info/WHEEL"].decode()
    assert "Root-Is-Purelib: false" in wheel_meta and "Tag: cp312-cp312-manylinux_2_34_x86_64" in wheel_meta
    manifest = json.loads(files["torch_green_contexts/_torch_builds/builds.json"])
    assert manifest["python"] == "cp312" and [b["torch"] for b in manifest["builds"]] == ["2.6.0", "2.15.0"]
    assert [b["cxx11_abi"] for b in manifest["builds"]] == [False, True]
    assert files["torch_green_contexts/_torch_builds/torch-2.15/_C.cpython-312-x.so"] == b"2.15" * 100
    record = files["torch_green_contexts-0.1.0.dist-info/RECORD"].decode().splitlines()
    assert len(record) == len(names)
    for line in record:
        name, digest, size = line.rsplit(",", 2)
        if name.endswith("RECORD"):
            continue
        expected = base64.urlsafe_b64encode(hashlib.sha256(files[name]).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}" and int(size) == len(files[name]), name
