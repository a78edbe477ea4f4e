//! The params and results of the public methods, and the pieces they share, one file per method family.
//!
//! Every type derives `Serialize`, `Deserialize`, `JsonSchema`, `Debug`, `Clone` and `PartialEq`, and is snake_case
//! on the wire. Two rules of docs/protocol.md ("Optional members and unknown values") hold throughout:
//! - an enum that the spec says "reads as unknown" has an `Unknown` variant that takes every value it does not know;
//! - a member that is "absent when not set / false when absent / 0 when absent" is skipped on output when so, and
//!   defaulted on input.
//!
//! A write (see [`crate::methods::MethodSpec::write`]) carries `command_id`. Methods without params take `{}`.
//! `protocol/fixtures/v1/` freezes an example of each type.

pub mod admin;
pub mod always;
pub mod approval;
pub mod backup;
pub mod changes;
pub mod common;
pub mod compact;
pub mod config;
pub mod context;
pub mod conversation;
pub mod delete;
pub mod device;
pub mod exits;
pub mod full;
pub mod input;
pub mod jobs;
pub mod login;
pub mod models;
pub mod presence;
pub mod projects;
pub mod prompt;
pub mod recent;
pub mod resume;
pub mod route;
pub mod sandbox;
pub mod sandbox_methods;
pub mod search;
pub mod shell;
pub mod steer;
pub mod subscribe;
pub mod surface;
pub mod trash;
pub mod turn;
pub mod undo;
pub mod watch;

pub use admin::{
    AdminStatusParams, AdminStatusResult, ConfigStatus, ListenerState, LoginKind, ProviderStatus, RemoteStatus, Root,
    RootSource, Roots,
};
pub use approval::{ApprovalDecision, ApprovalRespondParams, ApprovalRespondResult};
pub use backup::{AdminBackupParams, AdminBackupResult};
pub use changes::{FileChange, FileChangeKind, FileChanges};
pub use common::{
    ContextFill, Mode, ModeFallback, Origin, Overridden, PromptSettings, Stop, StopReason, TurnSettings, Usage,
};
pub use compact::{Compaction, ConversationCompactParams, ConversationCompactResult};
pub use config::{AdminConfigReloadParams, AdminConfigReloadResult, ConfigError};
pub use context::{
    ContextCache, ContextCompaction, ContextCounted, ContextItem, ContextModel, ContextPart, ContextPartKind,
    ContextSize, ConversationContextParams, ConversationContextResult, InstructionFile, InstructionFileState,
    InstructionScope,
};
pub use conversation::{
    ConversationDiffParams, ConversationDiffResult, ConversationStatus, ConversationSummary, ConversationsListParams,
    ConversationsListResult,
};
pub use delete::{ConversationDeleteParams, ConversationDeleteResult, DeleteBusy};
pub use device::{
    DeviceEnrollParams, DeviceEnrollResult, DeviceInfo, DeviceListParams, DeviceListResult, DevicePairConfirmParams,
    DevicePairConfirmResult, DevicePairStartParams, DeviceProveParams, DeviceProveResult, DeviceRevokeParams,
    DeviceRevokeResult, PairEnd, PairStartItem,
};
pub use exits::{
    ChainStep, ExitAction, ExitFacts, ExitInfo, ExitKind, ExitRecord, ExitSource, ExitTarget, GitCode, GitCodeItem,
    HostFact, JudgeKind, Judgement, Needs, TargetClass, Verdict,
};
pub use input::{AnswerInput, InputRespondParams, InputRespondResult, InputWait};
pub use jobs::{
    CallBackgroundParams, CallBackgroundResult, ForwardOutcome, HeldReason, JobCgroup, JobForward, JobId, JobInfo,
    JobMovedFrom, JobState, JobStopBy, JobWatch, JobsListParams, JobsListResult, JobsStopParams, JobsStopResult,
    NoticeKind,
};
pub use login::{AdminLoginApiKeyParams, AdminLoginApiKeyResult, AdminLogoutParams, AdminLogoutResult};
pub use models::{Catalog, CatalogOrigin, ModelInfo, ModelSource, ModelsListParams, ModelsListResult};
pub use presence::{Presence, PresenceSetParams, PresenceSetResult, PresenceSource};
pub use projects::{
    AdminProjectAddParams, AdminProjectAddResult, AdminProjectRemoveParams, AdminProjectRemoveResult, ProjectInfo,
    ProjectWriteResult, ProjectsListParams, ProjectsListResult,
};
pub use prompt::{Desktop, PromptContext, PromptSendParams, PromptSendResult, QueueAs, ShellContext, TerminalCommand};
pub use recent::{ConversationsRecentParams, ConversationsRecentResult, RecentConversation};
pub use resume::{ConversationResumeParams, ConversationResumeResult};
pub use route::{AttachHow, PromptRoute, RouteScope, RouteSwitch, SwitchReason};
pub use sandbox::{
    BlockReason, Blocked, Bus, BusProxyOff, BusRefusal, DesktopKind, Grant, Launch, ProxyProcess, ProxyState,
    SandboxPaths, SandboxStatus, SandboxSummary,
};
pub use sandbox_methods::{
    AdminSandboxCheckParams, AdminSandboxCheckResult, HostRuleSource, HostVerdict, PathView, ProbeName,
    SandboxExplainHostParams, SandboxExplainHostResult, SandboxExplainParams, SandboxExplainResult, SandboxProbe,
};
pub use search::{
    ConversationSearchParams, ConversationSearchResult, ConversationsSearchParams, ConversationsSearchResult,
    RangedText, SearchHit, SearchKind, SearchPartial, SearchRow, SearchStats, TextRange,
};
pub use shell::{
    ApprovedBy, How, ShellBusy, ShellInterruptParams, ShellInterruptResult, ShellStatusParams, ShellStatusResult,
};
pub use steer::{PromptWithdrawParams, PromptWithdrawResult, TurnSteerParams, TurnSteerResult, WithdrawTarget};
pub use subscribe::{
    CompactTrigger, ConversationSubscribeParams, Draft, DraftPart, RunningTurn, Snapshot, SnapshotLive,
};
pub use surface::{
    ReportedFile, SandboxSurfaceRespondParams, SandboxSurfaceRespondResult, SurfaceChange, SurfaceKind, SurfaceOutcome,
};
pub use trash::{TrashEntry, TrashListParams, TrashListResult, TrashRestoreParams, TrashRestoreResult};
pub use turn::{Resent, TurnInterruptParams, TurnInterruptResult, WithdrawnPrompt, WithdrawnSteer};
pub use undo::{
    TurnUndoParams, TurnUndoResult, TurnUndoSummary, UndoAction, UndoEntry, UndoReason, UndoRef, UndoRefusal,
    UndoRefusalKind, UndoRoot, UndoTurn,
};
pub use watch::ConversationsWatchParams;
