# efr shell integration for bash. Load it with: eval "$(efr shell-init bash)"
#   , why did that fail?   asks efr, with the last command, its exit status and the recent commands
#   ,new [text]            the next , (or this text, at once) starts a new conversation
#   ,undo [--dry-run ...]  undoes the last turn of this terminal's conversation (`efr undo`)
#   ,resume [ID] [--take]  takes a recent conversation up here (`efr resume`) and changes to its folder
# Loading it twice is harmless. The hook goes first in PROMPT_COMMAND because it must read $? before any other
# command changes it; it returns that status again, so the hooks after it see the same $?.
__efr_bin=__EFR_BIN__
# Loaded again: the state so far stays.
: "${__efr_last_line=}" "${__efr_last_status=0}" "${__efr_new=}" "${__efr_histno=}"
[[ ${__efr_recent+set} == set ]] || __efr_recent=()

__efr_is_comma() {
    [[ $1 == "," || $1 == ", "* || $1 == ",new" || $1 == ",new "* || $1 == ",undo" || $1 == ",undo "* || $1 == ",resume" || $1 == ",resume "* ]]
}

__efr_precmd() {
    local status=$? entry number line
    entry=$(HISTTIMEFORMAT= builtin history 1)
    if [[ $entry =~ ^[[:space:]]*([0-9]+)\*?[[:space:]][[:space:]](.*)$ ]]; then
        number=${BASH_REMATCH[1]}
        line=${BASH_REMATCH[2]}
        # The same history number again: an empty line was entered, no command ran.
        if [[ $number != "$__efr_histno" ]]; then
            __efr_histno=$number
            if ! __efr_is_comma "$line"; then
                __efr_last_line=$line
                __efr_last_status=$status
                __efr_recent+=("$status"$'\t'"$line")
                if (( ${#__efr_recent[@]} > __EFR_RECENT__ )); then
                    __efr_recent=("${__efr_recent[@]: -__EFR_RECENT__}")
                fi
            fi
        fi
    fi
    return "$status"
}

# `,` and `,new` are aliases so that globbing can be turned off before the words are expanded: `, why fail?` sends
# `fail?` as typed. The function turns globbing back on (when it was on) before anything else.
__efr_comma() {
    [[ $__efr_flags == *f* ]] || set +f
    local -a args=(prompt --shell bash)
    local entry
    if [[ -n $__efr_last_line ]]; then
        args+=(--last-command "$__efr_last_line" --last-status "$__efr_last_status")
    fi
    for entry in "${__efr_recent[@]}"; do
        args+=(--recent "$entry")
    done
    if [[ -n $__efr_new ]]; then
        args+=(--new)
        __efr_new=
    fi
    "$__efr_bin" "${args[@]}" -- "$@"
}

__efr_comma_new() {
    [[ $__efr_flags == *f* ]] || set +f
    __efr_new=1
    if (( $# > 0 )); then
        __efr_comma "$@"
    else
        printf '%s\n' "efr: the next , starts a new conversation"
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

alias ,='__efr_flags=$-; set -f; __efr_comma'
alias ,new='__efr_flags=$-; set -f; __efr_comma_new'
alias ,undo='__efr_undo'
alias ,resume='__efr_resume'

if [[ ";${PROMPT_COMMAND[*]};" != *";__efr_precmd;"* ]]; then
    PROMPT_COMMAND="__efr_precmd;${PROMPT_COMMAND:-}"
fi
