# Run as a script at every build (cmake -DSRC=<source> -DOUT=<header> -P PkbCommit.cmake):
# writes OUT defining PKB_COMMIT, the source's commit (with -dirty for uncommitted changes
# to tracked files; "unknown" outside git), only when it changed, so that nothing rebuilds
# for nothing. Results record it (versions.commit). A tree exported without its .git (the
# GPU runs' `git archive` snapshot) says its commit through the environment's PKB_COMMIT:
# git would answer for whatever repository holds the folder, which is another commit.
if(DEFINED ENV{PKB_COMMIT} AND NOT "$ENV{PKB_COMMIT}" STREQUAL "")
  set(commit "$ENV{PKB_COMMIT}")
else()
  execute_process(COMMAND git -C "${SRC}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  set(commit "unknown")
  if(rc EQUAL 0 AND NOT top STREQUAL "")
    get_filename_component(src_real "${SRC}" REALPATH)
    get_filename_component(top_real "${top}" REALPATH)
    if(src_real STREQUAL top_real)
      execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                      OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes ERROR_QUIET)
      if(NOT changes STREQUAL "")
        set(commit "${commit}-dirty")
      endif()
    endif()
  endif()
endif()
set(text "#define PKB_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
