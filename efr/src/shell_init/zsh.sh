# efr shell integration for zsh. Load it with: eval "$(efr shell-init zsh)"
#   , why did that fail?   asks efr, with the last command, its exit status and the recent commands
#   ,new [text]            the next , (or this text, at once) starts a new conversation
#   ,undo [--dry-run ...]  undoes the last turn of this terminal's conversation (`efr undo`)
#   ,resume [ID] [--take]  takes a recent conversation up here (`efr resume`) and changes to its folder
# Loading it twice is harmless: add-zsh-hook adds each hook once, after the hooks already there.
# Each function starts with `emulate -L zsh`: the user's options (ksharrays, shwordsplit, ...) stay the user's, and
# the code here reads as plain zsh.
__efr_bin=__EFR_BIN__
# Loaded again: the state so far stays.
typeset -g __efr_last_line=${__efr_last_line-} __efr_last_status=${__efr_last_status-0}
typeset -g __efr_new=${__efr_new-} __efr_pending=${__efr_pending-}
(( ${+__efr_recent} )) || typeset -ga __efr_recent

__efr_is_comma() {
    emulate -L zsh
    [[ $1 == "," || $1 == ", "* || $1 == ",new" || $1 == ",new "* || $1 == ",undo" || $1 == ",undo "* || $1 == ",resume" || $1 == ",resume "* ]]
}

# preexec: the line as typed, before it runs (precmd then pairs it with its status).
__efr_preexec() {
    emulate -L zsh
    __efr_pending=x$1
}

__efr_precmd() {
    local exit_status=$?
    emulate -L zsh
    # No pending line: an empty line was entered, no command ran.
    if [[ -n $__efr_pending ]]; then
        local line=${__efr_pending#x}
        __efr_pending=
        if ! __efr_is_comma "$line"; then
            __efr_last_line=$line
            __efr_last_status=$exit_status
            __efr_recent+=("$exit_status"$'\t'"$line")
            if (( ${#__efr_recent} > __EFR_RECENT__ )); then
                __efr_recent=("${(@)__efr_recent[-__EFR_RECENT__,-1]}")
            fi
        fi
    fi
    return $exit_status
}

# `,` and `,new` are aliases with noglob, so that `, why fail?` sends `fail?` as typed.
__efr_comma() {
    emulate -L zsh
    local -a args
    args=(prompt --shell zsh)
    local entry
    if [[ -n $__efr_last_line ]]; then
        args+=(--last-command "$__efr_last_line" --last-status "$__efr_last_status")
    fi
    for entry in "${(@)__efr_recent}"; do
        args+=(--recent "$entry")
    done
    if [[ -n $__efr_new ]]; then
        args+=(--new)
        __efr_new=
    fi
    "$__efr_bin" "${(@)args}" -- "$@"
}

__efr_comma_new() {
    emulate -L zsh
    __efr_new=1
    if (( $# > 0 )); then
        __efr_comma "$@"
    else
        print -r -- "efr: the next , starts a new conversation"
    fi
}

__efr_undo() {
    "$__efr_bin" undo "$@"
}

# efr resume prints only the folder to change to (nothing when this one is in the conversation's project).
__efr_resume() {
    local dir
    dir=$("$__efr_bin" resume --print-dir "$@") || return
    [[ -z $dir ]] || cd -- "$dir"
}

alias ,='noglob __efr_comma'
alias ,new='noglob __efr_comma_new'
alias ,undo='__efr_undo'
alias ,resume='__efr_resume'

autoload -Uz add-zsh-hook
add-zsh-hook preexec __efr_preexec
add-zsh-hook precmd __efr_precmd
