-- Leaving a libxmtp group (node profile): whether we asked to leave, and why we are no longer a member.
ALTER TABLE xmtp_groups ADD COLUMN leave_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE xmtp_groups ADD COLUMN removed_reason TEXT NOT NULL DEFAULT '';
